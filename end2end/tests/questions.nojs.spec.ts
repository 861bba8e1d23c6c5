import { expect, test } from "@playwright/test";
import { signIn } from "./helpers";

test("without JavaScript a reply button is a plain form post", async ({ page }) => {
  await signIn(page, false);
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByLabel("Message").fill("/choose");
  await page.getByRole("button", { name: "Send" }).click();
  const group = page.getByRole("group", { name: "Reply options" });
  await expect(async () => {
    await page.reload();
    await expect(group).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 15_000 });
  await group.getByRole("button", { name: "Contact" }).click();
  await expect(async () => {
    await page.reload();
    await expect(page.locator(".messages .message.assistant").last()).toContainText("The user picked: Contact", { timeout: 1000 });
  }).toPass({ timeout: 15_000 });
});
