import { expect, test } from "@playwright/test";
import { signIn } from "./helpers";

test("without JavaScript a message is sent by a plain form post", async ({ page }) => {
  await signIn(page, false);
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await page.getByLabel("Message").fill("No script here");
  await page.getByRole("button", { name: "Send" }).click();
  await expect(page.locator(".messages .message.user")).toContainText("No script here");
  // Without polling the reply shows on the next load.
  await expect(async () => {
    await page.reload();
    await expect(page.locator(".messages .message.assistant")).toContainText("No script here", { timeout: 1000 });
  }).toPass({ timeout: 15_000 });
});
