import { expect, test, Page } from "@playwright/test";
import { STREAM_URL } from "../playwright.config";
import { signIn, send, waitForHydration, watchPageErrors, shoot } from "./helpers";

// Against a local streaming model (end2end/support/stream-model.mjs) reached through the app's
// real OpenAI-compatible client: the reply grows in place, Stop keeps what came, an edit replaces
// the tail, and an attachment's text reaches the model. Only beside the one-process SQLite run.
test.skip(!!process.env.E2E_DATABASE, "the streaming server runs beside the SQLite run only");
test.use({ baseURL: STREAM_URL });

async function open(page: Page) {
  await signIn(page);
  await expect(page.locator(".topbar")).toContainText("stream-test-model");
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await waitForHydration(page);
}

const streaming = (page: Page) => page.locator(".messages .message.streaming .body");
const replies = (page: Page) => page.locator(".messages .message.assistant:not(.streaming) .body");

test("the reply grows in place, in visible steps, before it is recorded whole", async ({ page }) => {
  const errors = watchPageErrors(page);
  await open(page);
  await send(page, "hello there");
  const full = "Streaming reply to hello there: one two three four five six seven eight.";
  const seen = new Set<string>();
  await expect(async () => {
    const text = (await streaming(page).textContent({ timeout: 50 }).catch(() => null)) ?? "";
    // Trimmed: the rendering's paragraph ends with a line break.
    if (text) seen.add(text.trim());
    await expect(replies(page)).toHaveText(full, { timeout: 50 });
  }).toPass({ intervals: [30], timeout: 15_000 });
  const steps = [...seen];
  expect(steps.length, `steps seen: ${JSON.stringify(steps)}`).toBeGreaterThanOrEqual(3);
  for (const step of steps) expect(full.startsWith(step), step).toBe(true);
  await expect(streaming(page)).toHaveCount(0);
  expect(errors).toEqual([]);
});

test("the reply shows as markdown while it grows, an unfinished code fence as code", async ({ page }) => {
  const errors = watchPageErrors(page);
  await open(page);
  await send(page, "some markdown please");
  // The growing line's markup, sampled until the reply is recorded (the line is `.streaming`
  // only until then).
  const seen: string[] = [];
  await expect(async () => {
    const html = await streaming(page)
      .evaluate((body) => body.innerHTML, undefined, { timeout: 50 })
      .catch(() => null);
    if (html) seen.push(html);
    await expect(replies(page).locator("pre code")).toHaveCount(1, { timeout: 50 });
  }).toPass({ intervals: [30], timeout: 20_000 });
  const shown = (pattern: RegExp) => seen.some((html) => pattern.test(html));
  expect(shown(/<strong>bold<\/strong>/), seen.join("\n---\n")).toBe(true);
  expect(shown(/<li>first item<\/li>/), seen.join("\n---\n")).toBe(true);
  // Code while its fence is still open: the text after the closing fence has not come yet.
  expect(
    seen.some((html) => /<pre><code>let step1 = 1;/.test(html) && !html.includes("Done.")),
    seen.join("\n---\n"),
  ).toBe(true);
  expect(shown(/<img|<script/i)).toBe(false);
  await expect(replies(page).last().locator("strong")).toHaveText("bold");
  await expect(streaming(page)).toHaveCount(0);
  expect(errors).toEqual([]);
});

test("Stop keeps the text so far, marked as stopped, and the conversation goes on", async ({ page }) => {
  const errors = watchPageErrors(page);
  await open(page);
  await send(page, "tell me a long story");
  await expect(streaming(page)).toContainText("word3");
  await page.getByRole("button", { name: "Stop" }).click();
  const stopped = page.locator(".messages .message.assistant.stopped");
  await expect(stopped).toBeVisible();
  await expect(stopped.locator(".stopped-mark")).toHaveText("Stopped");
  const kept = (await stopped.locator(".body").textContent())!.trim();
  expect(kept).toMatch(/^word1 word2 word3/);
  // What the reader saw is what is kept: at most a piece that was on its way when Stop was
  // pressed joins it, and nothing after that.
  await page.waitForTimeout(800);
  const final = (await stopped.locator(".body").textContent())!.trim();
  expect(final.startsWith(kept), `${kept} / ${final}`).toBe(true);
  expect(final.split(" ").length - kept.split(" ").length).toBeLessThanOrEqual(1);
  expect(final).not.toContain("word60");
  await send(page, "short one");
  await expect(replies(page).last()).toHaveText("Streaming reply to short one: one two three four five six seven eight.");
  await shoot(page, "stream-stopped");
  expect(errors).toEqual([]);
});

test("editing an earlier message replaces the conversation after it", async ({ page }) => {
  const errors = watchPageErrors(page);
  await open(page);
  await send(page, "first question");
  await expect(replies(page).last()).toContainText("Streaming reply to first question");
  await send(page, "second question");
  await expect(replies(page).last()).toContainText("Streaming reply to second question");

  const first = page.locator(".messages .message.user").first();
  // Every editable line is drawn again when the editor opens or closes; one that did not change
  // keeps its nodes (a line that parsed its HTML again would lose the mark set here).
  const second = page.locator(".messages .message.user").nth(1);
  // Marked once the turn has ended: its end gives each of the reader's lines an "Edit", which
  // is a change, and the line is written anew then.
  await expect(page.locator('.messages[data-status="idle"]')).toHaveCount(1);
  await expect(second.locator(".edit-message")).toBeVisible();
  await second.locator(".body").evaluate((body) => ((body as unknown as { kept: boolean }).kept = true));
  // One editor at a time, opened in place and closed again without a page load (a load would
  // forget the mark set here): by its Cancel, or by "Edit" again.
  await page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true));
  await first.locator(".edit-message").click();
  await expect(page.locator(".edit-form")).toHaveCount(1);
  await first.getByRole("link", { name: "Cancel" }).click();
  await expect(page.locator(".edit-form")).toHaveCount(0);
  await first.locator(".edit-message").click();
  await expect(first.locator(".edit-form")).toHaveCount(1);
  await first.locator(".edit-message").click();
  await expect(page.locator(".edit-form")).toHaveCount(0);
  expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).toBe(true);
  expect(await second.locator(".body").evaluate((body) => (body as unknown as { kept?: boolean }).kept)).toBe(true);
  await first.locator(".edit-message").click();
  await first.locator(".edit-form textarea").fill("changed question");
  await first.getByRole("button", { name: "Send edited message" }).click();
  await expect(replies(page)).toHaveCount(1);
  await expect(replies(page)).toContainText("Streaming reply to changed question");
  await expect(page.locator(".messages .message.user")).toHaveText(["changed question"].map((text) => new RegExp(text)));
  await expect(page.locator(".messages")).not.toContainText("second question");
  await expect(page.locator(".edit-form")).toHaveCount(0);
  expect(errors).toEqual([]);
});

test("an attached file's text reaches the model", async ({ page }) => {
  const errors = watchPageErrors(page);
  await open(page);
  await page.locator(".attach-form input[type=file]").setInputFiles({
    name: "notes.txt",
    mimeType: "text/plain",
    buffer: Buffer.from("The museum opens at nine.\nSecond line."),
  });
  // A chosen file goes at once (issue 40): the form's own button is for pages without the WASM.
  await expect(page.locator(".pending-attachments")).toContainText("notes.txt");
  await send(page, "what does the file say?");
  await expect(replies(page).last()).toHaveText("I read the file: The museum opens at nine..");
  const sent = page.locator(".messages .message.user").last();
  await expect(sent.locator(".attachments a")).toHaveText("notes.txt");
  await expect(page.locator(".pending-attachments")).toHaveCount(0);

  // A file that is not what its name says is refused with a sentence beside the form, on the
  // same page, and nothing is attached.
  await page.locator(".attach-form input[type=file]").setInputFiles({
    name: "report.pdf",
    mimeType: "application/pdf",
    buffer: Buffer.from("not a pdf at all"),
  });
  await expect(page.locator(".attach-bar [role=alert]")).toContainText("does not match its name");
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await expect(page.locator(".pending-attachments")).toHaveCount(0);
  expect(errors).toEqual([]);
});
