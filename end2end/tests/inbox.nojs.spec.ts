import { expect, test } from "@playwright/test";
import { signIn } from "./helpers";

test("without JavaScript the inbox's card is a plain form post", async ({ page }) => {
  await signIn(page, false);
  await page.getByRole("button", { name: "New conversation" }).click();
  await page.getByLabel("Message").fill("/note Sweep the bakery");
  await page.getByRole("button", { name: "Send" }).click();
  await expect(async () => {
    await page.reload();
    await expect(page.locator(".approval-card")).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 15_000 });
  const id = page.url().split("/c/")[1].split("?")[0];
  await page.goto("/runs");
  const item = page.locator(".inbox-item").filter({ has: page.locator(`a[href="/c/${id}"]`) });
  await item.getByRole("button", { name: "Apply" }).click();
  await expect(async () => {
    await page.goto(`/c/${id}`);
    await expect(page.locator(".messages .message.assistant").last()).toContainText("Saved note", { timeout: 1000 });
  }).toPass({ timeout: 15_000 });
  await page.goto("/runs");
  await expect(page.locator(`.inbox-item a[href="/c/${id}"]`)).toHaveCount(0);
});
