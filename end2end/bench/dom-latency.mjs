// Measures, in Debian's Chromium, the time from a state change on the server to the page's DOM
// showing it. Run by the bench binary (bench/src/browser.rs) against its server:
//
//   node end2end/bench/dom-latency.mjs BASE_URL USER PASSWORD ROUNDS
//
// A signed-in page is open on a conversation, hydrated, its event stream connected. Each round,
// from outside the page (this script's own HTTP client, the page's cookies), a message is sent;
// the server records it (the state change) and tells the page's stream; the page fetches what
// changed and renders it. A MutationObserver in the page stamps the moment the message's text is
// in the DOM. Both clocks are this machine's wall clock (`performance.timeOrigin + performance.now()`,
// below a millisecond in each). Prints one JSON line:
// {"samples": [ms, …]}.
import { chromium } from "@playwright/test";

const [base, user, password, roundsText] = process.argv.slice(2);
const rounds = Number(roundsText ?? 30);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
try {
  const context = await browser.newContext({ baseURL: base });
  const page = await context.newPage();
  await page.goto("/login");
  await page.locator("body[data-hydrated]").waitFor({ state: "attached" });
  await page.locator("input[name=username]").fill(user);
  await page.locator("input[name=password]").fill(password);
  await page.locator(".login-form button[type=submit]").click();
  await page.locator(".new-conversation button").waitFor();

  const api = context.request;
  const created = await api.post("/api/create_conversation", { form: {} });
  if (!created.ok()) throw new Error(`create_conversation: ${created.status()}`);
  const id = await created.json();
  const opened = page.waitForResponse((response) => response.url().includes(`/events/conversations/${id}`));
  await page.goto(`/c/${id}`);
  await page.locator("body[data-hydrated]").waitFor({ state: "attached" });
  await opened;

  const settled = async () => {
    for (let i = 0; i < 2000; i++) {
      const view = await (await api.post("/api/conversation", { form: { id } })).json();
      if (view.status !== "processing") return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    throw new Error("the conversation never settled");
  };

  const samples = [];
  for (let round = 0; round < rounds; round++) {
    const marker = `dom-mark-${round}-${Date.now()}`;
    const seen = page.evaluate(
      (marker) =>
        new Promise((resolve) => {
          const observer = new MutationObserver(() => {
            if (document.body.textContent.includes(marker)) {
              observer.disconnect();
              resolve(performance.timeOrigin + performance.now());
            }
          });
          observer.observe(document.body, { childList: true, subtree: true, characterData: true });
        }),
      marker,
    );
    // The observer is in place before the change is made.
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve())));
    const sent = performance.timeOrigin + performance.now();
    const response = await api.post("/api/send_message", { form: { conversation_id: id, content: marker } });
    if (!response.ok()) throw new Error(`send_message: ${response.status()} ${await response.text()}`);
    const shown = await Promise.race([
      seen,
      new Promise((_, reject) => setTimeout(() => reject(new Error(`${marker} never shown`)), 10_000)),
    ]);
    samples.push(shown - sent);
    await settled();
    // Let the reply render too, so the next round starts on a quiet page.
    await page.waitForTimeout(50);
  }
  console.log(JSON.stringify({ samples }));
} finally {
  await browser.close();
}
