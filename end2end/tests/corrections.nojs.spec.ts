import { expect, Page, test } from "@playwright/test";
import * as fs from "node:fs";
import * as path from "node:path";
import { signIn } from "./helpers";

// The folder server-filesystem works on (scripts/e2e-servers makes it empty at start).
const FILES = path.resolve(__dirname, "../../target/e2e-mcp/files");

async function filesReady(page: Page) {
  await expect(async () => {
    await page.goto("/tools");
    const listed = page.locator('.mcp-server[data-server="files"]');
    await expect(listed.locator(".status")).toHaveText("connected", { timeout: 1000 });
    await expect(listed.locator('li[data-tool="files.write_file"]')).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 20_000 });
}

test("without JavaScript a refused edit comes back with the field's sentence beside it", async ({ page }) => {
  await signIn(page, false);
  await filesReady(page);
  const file = path.join(FILES, "schema-nojs.txt");
  await page.goto("/");
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await page.getByLabel("Message").fill(`/mcp files.write_file ${JSON.stringify({ path: file, content: "original" })}`);
  await page.getByRole("button", { name: "Send" }).click();
  const card = page.locator(".approval-card");
  await expect(async () => {
    await page.reload();
    await expect(card).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 20_000 });
  await card.locator(".card-edit summary").click();
  const pathField = card.locator('[name="edits[call0/path]"]');
  await pathField.fill("");
  await card.getByRole("button", { name: "Apply edited" }).click();
  // The page it comes back to: the general sentence, and the edit form open with the path's.
  await expect(page.getByRole("alert").filter({ hasText: "The edited arguments do not fit the tool" })).toBeVisible();
  await expect(card.locator(".field").filter({ has: page.locator('[name="edits[call0/path]"]') }).locator(".field-problem")).toHaveText(
    "This field is required.",
  );
  await expect(pathField).toBeVisible();
  // Tied to its field without the WASM too (issue 40): marked invalid, its sentence describing it.
  await expect(pathField).toHaveAttribute("aria-invalid", "true");
  await expect(pathField).toHaveAccessibleDescription("This field is required.");
  expect(fs.existsSync(file)).toBe(false);
});
