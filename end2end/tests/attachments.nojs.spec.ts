import { expect, test } from "@playwright/test";
import { signIn } from "./helpers";

test("without JavaScript a file is attached by a plain form, and a bad one gets a page saying why", async ({ page }) => {
  await signIn(page, false);
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  const conversation = page.url();

  await page.locator(".attach-form input[type=file]").setInputFiles({
    name: "plan.md",
    mimeType: "text/markdown",
    buffer: Buffer.from("# Plan\nOpen on Monday."),
  });
  await page.locator(".attach-form button[type=submit]").click();
  // The server sends the page back, with the file waiting for the next message.
  await expect(page).toHaveURL(conversation);
  await expect(page.locator(".pending-attachments")).toContainText("plan.md");

  await page.locator(".attach-form input[type=file]").setInputFiles({
    name: "sheet.xlsx",
    mimeType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    buffer: Buffer.from("plain text, not a workbook"),
  });
  await page.locator(".attach-form button[type=submit]").click();
  await expect(page.getByRole("alert")).toContainText("does not match its name");
  await page.getByRole("link", { name: "Back to the chat" }).click();
  await expect(page).toHaveURL(conversation);
  await expect(page.locator(".pending-attachments li")).toHaveCount(1);
});
