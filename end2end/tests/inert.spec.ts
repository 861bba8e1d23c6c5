import { expect, test } from "@playwright/test";
import { newConversation, signIn } from "./helpers";

const PAYLOAD = `<img src=x onerror="window.__xss = 1"><script>window.__xss = 2</script>`;

test("markup in messages, model answers and card arguments is shown, never run", async ({ page }) => {
  await signIn(page);
  // The user's own message, and the demo model's echo of it (rendered as markdown, then sanitised).
  await newConversation(page, PAYLOAD);
  await expect(page.locator(".messages .message.user .body").last()).toHaveText(PAYLOAD);
  await expect(page.locator(".messages .message.assistant").last()).toContainText("You said:");
  await expect(page.locator(".messages .message.assistant img[onerror]")).toHaveCount(0);
  await expect(page.locator(".messages script")).toHaveCount(0);
  // The first message names the conversation: its entry in the list shows the title as text.
  const entry = page.locator(".conversation-list a[aria-current=page] .title");
  await expect(entry).toContainText('<img src=x onerror="window.__xss');
  await expect(page.locator(".conversation-list img, .conversation-list script")).toHaveCount(0);

  // Model-chosen tool arguments on an approval card are text.
  await page.getByLabel("Message").fill(`/note ${PAYLOAD}`);
  await page.getByRole("button", { name: "Send" }).click();
  await expect(page.locator(".approval-card .arguments")).toContainText("onerror");
  await expect(page.locator(".approval-card img")).toHaveCount(0);
  await page.locator(".approval-card").getByRole("button", { name: "Cancel" }).click();

  // A full reload renders the stored transcript on the server: still inert.
  await page.reload();
  await expect(page.locator(".messages .message.user .body").first()).toHaveText(PAYLOAD);
  await expect(entry).toContainText('<img src=x onerror="window.__xss');
  await expect(page.locator(".conversation-list img, .conversation-list script")).toHaveCount(0);
  expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
});
