import { expect, Page, test } from "@playwright/test";
import * as fs from "node:fs";
import * as path from "node:path";
import { newConversation, send, signIn, waitForHydration, watchPageErrors } from "./helpers";

// The folder server-filesystem works on (scripts/e2e-servers makes it empty at start).
const FILES = path.resolve(__dirname, "../../target/e2e-mcp/files");

/** Waits until the MCP file server is connected with its write tool. */
async function filesReady(page: Page) {
  await expect(async () => {
    await page.goto("/tools");
    const listed = page.locator('.mcp-server[data-server="files"]');
    await expect(listed.locator(".status")).toHaveText("connected", { timeout: 1000 });
    await expect(listed.locator('li[data-tool="files.write_file"]')).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 20_000 });
}

function writeCommand(file: string, content: string): string {
  return `/mcp files.write_file ${JSON.stringify({ path: file, content })}`;
}

test.beforeEach(async ({ page }) => {
  await signIn(page);
});

test("edit on a content card: the edited text is what the page gets", async ({ page }) => {
  const errors = watchPageErrors(page);
  // The blog post's link, which no other spec changes: an edit here cannot change what the other
  // tours start from.
  await page.goto("/pages/5");
  await waitForHydration(page);
  await page.getByRole("button", { name: "Start a guided tour" }).click();
  const panel = page.getByRole("complementary", { name: "Chat about this page" });
  await panel.getByRole("group", { name: "Reply options" }).getByRole("button", { name: "4. Vague link text" }).click();
  const card = panel.locator(".approval-card");
  await expect(card.locator(".preview")).toBeVisible();
  await card.locator(".card-edit summary").click();
  const text = card.getByLabel("Proposed text");
  await expect(text).not.toHaveValue("");
  const edited = "All our posts about bread and baking";
  await text.fill(edited);
  await card.getByRole("button", { name: "Apply edited" }).click();
  await expect(page.locator(".block.link")).toContainText(edited);
  await expect(panel.locator(".message.user").last()).toHaveText(/Applied as edited/);
  expect(errors).toEqual([]);
});

test("edit on an MCP tool: the file on disk has the edited content", async ({ page }) => {
  await filesReady(page);
  const file = path.join(FILES, "x.txt");
  await page.goto("/");
  await newConversation(page, writeCommand(file, "original"));
  const card = page.locator(".approval-card");
  await expect(card.locator(".tool")).toHaveText("files.write_file");
  await card.locator(".card-edit summary").click();
  const content = card.locator('[name="edits[call0/content]"]');
  await expect(content).toHaveValue("original");
  await content.fill("edited in the form");
  await card.getByRole("button", { name: "Apply edited" }).click();
  await expect(card).toHaveCount(0);
  await expect(page.locator(".messages .message.assistant").last()).toContainText("changed the arguments");
  expect(fs.readFileSync(file, "utf8")).toBe("edited in the form");
});

test("respond with a sentence: the model reads it, nothing is written", async ({ page }) => {
  await filesReady(page);
  const file = path.join(FILES, "respond.txt");
  await page.goto("/");
  await newConversation(page, writeCommand(file, "not wanted"));
  const card = page.locator(".approval-card");
  await card.locator(".card-respond summary").click();
  await card.getByLabel("What should the assistant do instead?").fill("Use the formal tone.");
  await card.getByRole("button", { name: "Decline and send" }).click();
  await expect(card).toHaveCount(0);
  await expect(page.locator(".messages .message.user").last()).toHaveText(/Declined: Use the formal tone\./);
  await expect(page.locator(".messages .message.assistant").last()).toContainText('The person said: "Use the formal tone."');
  expect(fs.existsSync(file)).toBe(false);
});

test("always allow skips the card next time; revoked in the settings, the card is back", async ({ page }) => {
  await filesReady(page);
  const first = path.join(FILES, "always-1.txt");
  await page.goto("/");
  await newConversation(page, writeCommand(first, "one"));
  const card = page.locator(".approval-card");
  await card.getByLabel("Always allow files.write_file in this conversation").check();
  await card.getByRole("button", { name: "Apply", exact: true }).click();
  await expect(card).toHaveCount(0);
  await expect.poll(() => fs.existsSync(first)).toBe(true);
  const conversation = page.url();

  const second = path.join(FILES, "always-2.txt");
  await send(page, writeCommand(second, "two"));
  await expect(page.locator(".messages .message.user").last()).toHaveText(/Approved automatically: files\.write_file/);
  await expect.poll(() => fs.existsSync(second) && fs.readFileSync(second, "utf8")).toBe("two");
  await expect(card).toHaveCount(0);

  await page.goto("/account");
  const policy = page.locator(".policies .policy").filter({ hasText: "files.write_file" });
  await expect(policy).toHaveCount(1);
  await policy.getByRole("button", { name: "Revoke" }).click();
  await expect(page.locator(".policies .policy")).toHaveCount(0);

  await page.goto(conversation);
  await waitForHydration(page);
  const third = path.join(FILES, "always-3.txt");
  await send(page, writeCommand(third, "three"));
  await expect(card.locator(".tool")).toHaveText("files.write_file");
  expect(fs.existsSync(third)).toBe(false);
});

test("an edited field that breaks the schema gets its sentence beside it; nothing is written", async ({ page }) => {
  const errors = watchPageErrors(page);
  await filesReady(page);
  const file = path.join(FILES, "schema.txt");
  await page.goto("/");
  await waitForHydration(page);
  await newConversation(page, writeCommand(file, "original"));
  const card = page.locator(".approval-card");
  await card.locator(".card-edit summary").click();
  const pathField = card.locator('[name="edits[call0/path]"]');
  const content = card.locator('[name="edits[call0/content]"]');
  await expect(pathField).toHaveValue(file);
  // The schema requires a path: emptied, it is taken out of the arguments.
  await pathField.fill("");
  await content.fill("kept as typed");
  await card.getByRole("button", { name: "Apply edited" }).click();
  const beside = card.locator(".field").filter({ has: page.locator('[name="edits[call0/path]"]') }).locator(".field-problem");
  await expect(beside).toHaveText("This field is required.");
  await expect(page.getByRole("alert").filter({ hasText: "The edited arguments do not fit the tool" })).toBeVisible();
  // Only the path's field says so; what was typed stays for the correction.
  await expect(card.locator(".field-problem")).toHaveCount(1);
  await expect(content).toHaveValue("kept as typed");
  await expect(card.locator(".tool")).toHaveText("files.write_file");
  expect(fs.existsSync(file)).toBe(false);
  // Corrected, it applies as edited.
  await pathField.fill(file);
  await card.getByRole("button", { name: "Apply edited" }).click();
  await expect(card).toHaveCount(0);
  await expect.poll(() => fs.existsSync(file) && fs.readFileSync(file, "utf8")).toBe("kept as typed");
  expect(errors).toEqual([]);
});

test("an admin permits “always for me” on the tools page; the card then offers it", async ({ page }) => {
  await filesReady(page);
  const row = page.locator('.mcp-server[data-server="files"] li[data-tool="files.write_file"]');
  await row.getByRole("button", { name: "Let users always allow it for themselves" }).click();
  await expect(page).toHaveURL(/\/tools$/);
  await expect(row.locator(".policy-permit")).toContainText("Users may always allow it for themselves");

  const file = path.join(FILES, "permitted.txt");
  await page.goto("/");
  await newConversation(page, writeCommand(file, "one"));
  const card = page.locator(".approval-card");
  await expect(card.getByLabel("Always allow files.write_file for me")).toBeVisible();
  await card.getByRole("button", { name: "Cancel" }).click();
  await expect(card).toHaveCount(0);

  // Withdrawn, the card offers this conversation only.
  await page.goto("/tools");
  await row.getByRole("button", { name: "Withdraw" }).click();
  await expect(row.getByRole("button", { name: "Let users always allow it for themselves" })).toBeVisible();
  await page.goto("/");
  await newConversation(page, writeCommand(file, "two"));
  await expect(card.getByLabel("Always allow files.write_file in this conversation")).toBeVisible();
  await expect(card.getByLabel("Always allow files.write_file for me")).toHaveCount(0);
  expect(fs.existsSync(file)).toBe(false);
});
