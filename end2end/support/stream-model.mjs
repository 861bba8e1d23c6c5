// A local streaming model for the end-to-end tests: an OpenAI-compatible `/v1/chat/completions`
// that answers from the conversation it is sent, a word at a time (server-sent events), the way
// OpenAI, Ollama, vLLM and llama.cpp's server do. Not the app's model: the app talks to it through
// its real OpenAI-compatible client, as it would to any of those servers.
//   node stream-model.mjs PORT
// The reply depends on the reader's last message:
// - a message with an attached file: "I read the file: <its first line>."
// - a message containing "markdown": bold text, a list and a code block (issue 40)
// - a message containing "long": sixty words (time enough to press Stop)
// - anything else: "Streaming reply to <message>: one two … eight."
import http from "node:http";

const port = Number(process.argv[2] ?? 3299);
const WORD_DELAY_MS = 120;

function replyTo(messages) {
  const last = [...messages].reverse().find((message) => message.role === "user");
  const text = String(last?.content ?? "");
  const attached = text.indexOf("[Attached file:");
  if (attached >= 0) {
    const body = text.slice(attached).split("\n")[1] ?? "";
    return `I read the file: ${body.trim()}.`;
  }
  if (text.includes("markdown")) {
    // Formatting that shows while the reply grows; the code fence closes only with the last piece.
    const code = Array.from({ length: 6 }, (_, index) => `let step${index + 1} = ${index + 1};`).join("\n");
    const reply = `Here is **bold** text and a list:\n\n- first item\n- second item\n\n\`\`\`\n${code}\n\`\`\`\n\nDone.`;
    // With "long" too: forty words more, time enough to look at the page while it streams.
    const more = Array.from({ length: 40 }, (_, index) => `more${index + 1}`).join(" ");
    return text.includes("long") ? `${reply}\n\n${more}.` : reply;
  }
  if (text.includes("long")) {
    return Array.from({ length: 60 }, (_, index) => `word${index + 1}`).join(" ") + ".";
  }
  const words = "one two three four five six seven eight".split(" ");
  return `Streaming reply to ${text.split("\n")[0]}: ${words.join(" ")}.`;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const server = http.createServer((request, response) => {
  if (request.method !== "POST" || !request.url.endsWith("/chat/completions")) {
    response.writeHead(404).end();
    return;
  }
  let raw = "";
  request.on("data", (chunk) => (raw += chunk));
  request.on("end", async () => {
    const body = JSON.parse(raw);
    const reply = replyTo(body.messages ?? []);
    if (!body.stream) {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ choices: [{ message: { role: "assistant", content: reply }, finish_reason: "stop" }] }));
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    let closed = false;
    response.on("close", () => (closed = true));
    const chunk = (delta, finish = null) =>
      `data: ${JSON.stringify({ object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    response.write(chunk({ role: "assistant", content: "" }));
    const pieces = reply.split(/(?<= )/);
    for (const piece of pieces) {
      if (closed) return;
      await sleep(WORD_DELAY_MS);
      response.write(chunk({ content: piece }));
    }
    response.write(chunk({}, "stop"));
    response.end("data: [DONE]\n\n");
  });
});

server.listen(port, "127.0.0.1");
