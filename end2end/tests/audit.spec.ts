import { expect, test } from "@playwright/test";
import { newConversation, shoot, signIn, waitForHydration, watchPageErrors } from "./helpers";

test("a decided card and an answered question are on the audit page, filtered and exported", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await newConversation(page, "/note Audit the rye");
  const card = page.locator(".conversation .approval-card");
  await card.getByRole("button", { name: "Apply" }).click();
  await expect(card).toHaveCount(0);
  const noted = page.url().split("/c/")[1].split("?")[0];

  await newConversation(page, "/choose");
  const group = page.getByRole("group", { name: "Reply options" });
  await group.getByRole("button", { name: "Contact" }).click();
  await expect(group).toHaveCount(0);
  const chosen = page.url().split("/c/")[1].split("?")[0];

  await page.getByRole("link", { name: "Audit log" }).click();
  await expect(page.getByRole("heading", { name: "Audit log" })).toBeVisible();
  const approved = page.locator(".audit-row[data-action=approved]").filter({ has: page.locator(`a[href="/c/${noted}"]`) });
  await expect(approved).toHaveCount(1);
  await expect(approved.locator(".who")).toHaveText("demo");
  await expect(approved.locator(".surface")).toHaveText("Chat");
  await expect(approved.locator(".arguments")).toContainText("Audit the rye");
  const answered = page.locator(".audit-row[data-action=answered]").filter({ has: page.locator(`a[href="/c/${chosen}"]`) });
  await expect(answered).toHaveCount(1);
  await expect(answered.locator(".answer")).toContainText("Contact");
  await shoot(page, "audit");

  // A filter is a link: the tool's rows only, and the export keeps it.
  await page.getByLabel("Tool").fill("ask_choice");
  await page.getByRole("button", { name: "Filter" }).click();
  await expect(page).toHaveURL(/tool=ask_choice/);
  await expect(approved).toHaveCount(0);
  await expect(answered).toHaveCount(1);
  const exported = await page.request.get(await page.locator("a.export-json").getAttribute("href") ?? "");
  expect(exported.status()).toBe(200);
  const rows = await exported.json();
  expect(rows.every((row: { tools: string[] }) => row.tools.includes("ask_choice"))).toBe(true);
  expect(rows.some((row: { action: string; answer: string }) => row.action === "answered" && row.answer === "Contact")).toBe(true);
  expect(errors).toEqual([]);
});

test("a run dismissed from the runs inbox leaves the list and is on the record", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await newConversation(page, "/note Dismiss me");
  await expect(page.locator(".conversation .approval-card")).toBeVisible();
  const id = page.url().split("/c/")[1].split("?")[0];

  await page.goto("/runs");
  await waitForHydration(page);
  const item = page.locator(".inbox-item").filter({ has: page.locator(`a[href="/c/${id}"]`) });
  await item.getByRole("button", { name: "Dismiss" }).click();
  await expect(item).toHaveCount(0);

  await page.goto(`/c/${id}`);
  await expect(page.locator(".messages .message .note").last()).toHaveText("Dismissed from the runs inbox by demo.");
  await expect(page.locator(".conversation .approval-card")).toHaveCount(0);

  await page.goto("/audit");
  const dismissed = page.locator(".audit-row[data-action=dismissed]").filter({ has: page.locator(`a[href="/c/${id}"]`) });
  await expect(dismissed).toHaveCount(1);
  await expect(dismissed.locator(".surface")).toHaveText("Runs inbox");
  await expect(dismissed.locator(".action")).toHaveText("Dismissed");
  expect(errors).toEqual([]);
});
