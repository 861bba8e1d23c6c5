import { execFileSync } from "node:child_process";
import { expect, Page, test } from "@playwright/test";
import { shoot, waitForHydration, watchPageErrors } from "./helpers";

// The database the servers under test use (scripts/e2e-servers), from end2end/.
const DATABASE = process.env.E2E_DATABASE ?? "../target/e2e/tourguide.db";

async function signInAs(page: Page, username: string, password: string) {
  await page.goto("/login");
  await waitForHydration(page);
  await page.locator("input[name=username]").fill(username);
  await page.locator("input[name=password]").fill(password);
  await page.locator(".login-form button[type=submit]").click();
  await expect(page.locator(".new-conversation button")).toBeVisible();
}

test("an admin made on the command line adds an editor, whose write a reviewer approves in the inbox", async ({ browser }) => {
  const suffix = Date.now().toString(36);
  const chief = `chief-${suffix}`;
  const editorName = `ed-${suffix}`;
  // The operator creates the admin; the password comes on standard input, never as an argument.
  const out = execFileSync("../target/debug/server", ["user", "add", chief, "--role", "admin", "--database", DATABASE], {
    input: "chief-password\n",
  }).toString();
  expect(out).toBe(`Added ${chief} (admin).\n`);

  const adminContext = await browser.newContext();
  const admin = await adminContext.newPage();
  const errors = watchPageErrors(admin);
  await signInAs(admin, chief, "chief-password");
  await admin.getByRole("link", { name: "Accounts" }).click();
  await expect(admin.getByRole("heading", { name: "Accounts", level: 1 })).toBeVisible();
  await waitForHydration(admin);
  const add = admin.locator("form.add-account");
  await add.getByLabel("User name").fill(editorName);
  await add.getByLabel("Password").fill("editor-password");
  await add.getByRole("button", { name: "Add account" }).click();
  const row = admin.locator(`tr[data-username="${editorName}"]`);
  await expect(row).toBeVisible();
  await expect(row.getByLabel("May approve own changes")).not.toBeChecked();
  await shoot(admin, "accounts");

  // The editor's write waits for a reviewer: no Apply for them, Cancel stays.
  const editorContext = await browser.newContext();
  const editor = await editorContext.newPage();
  await signInAs(editor, editorName, "editor-password");
  await editor.getByRole("button", { name: "New conversation" }).click();
  await waitForHydration(editor);
  await editor.getByLabel("Message").fill("/note Order rye flour");
  await editor.getByRole("button", { name: "Send" }).click();
  const card = editor.locator(".approval-card");
  await expect(card.locator(".reviewer-note")).toContainText("Waits for a reviewer");
  await expect(card.getByRole("button")).toHaveText(["Cancel"]);
  await shoot(editor, "approval-waits-for-reviewer");

  // The reviewer approves it in the inbox; the editor's open chat shows the outcome.
  await admin.getByRole("link", { name: "Waiting" }).click();
  await waitForHydration(admin);
  const item = admin.locator(".inbox-item").filter({ hasText: editorName });
  await expect(item.locator(".review-of")).toContainText(editorName);
  await expect(item.locator(".approval-card").getByRole("button")).toHaveText(["Apply"]);
  await item.getByRole("button", { name: "Apply" }).click();
  await expect(item).toHaveCount(0);
  await expect(card).toHaveCount(0);
  await expect(editor.locator(".messages .message.assistant").last()).toContainText("Saved note");

  // The editor has no accounts page, and a crafted admin request is refused.
  await expect(editor.getByRole("link", { name: "Accounts" })).toHaveCount(0);
  const crafted = await editor.request.post("/api/admin_accounts", { headers: { origin: new URL(editor.url()).origin } });
  expect(crafted.status()).toBe(403);
  expect(errors).toEqual([]);
  await adminContext.close();
  await editorContext.close();
});
