import { expect, test } from "@playwright/test";
import { newConversation, pickLanguage, send, shoot, signIn, waitForHydration, watchPageErrors } from "./helpers";

test("deciding in the runs inbox updates the open chat", async ({ page, context }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await newConversation(page, "/note Bake rye on Friday");
  const card = page.locator(".conversation .approval-card");
  await expect(card.getByRole("button")).toHaveText(["Apply", "Cancel"]);
  const id = page.url().split("/c/")[1].split("?")[0];

  // The same card in the inbox, in a second tab, with the same buttons.
  const inbox = await context.newPage();
  await inbox.goto("/runs");
  await waitForHydration(inbox);
  await expect(inbox.getByRole("heading", { name: "Waiting for you" })).toBeVisible();
  const item = inbox.locator(".inbox-item").filter({ has: inbox.locator(`a[href="/c/${id}"]`) });
  await expect(item.locator(".approval-card .arguments")).toContainText("Bake rye on Friday");
  await expect(item.locator(".approval-card").getByRole("button")).toHaveText(["Apply", "Cancel"]);
  await shoot(inbox, "inbox");
  await item.getByRole("button", { name: "Apply" }).click();
  await expect(item).toHaveCount(0);

  // The open chat hears of it without a reload: the card is gone and the answer is there.
  await expect(card).toHaveCount(0);
  await expect(page.locator(".messages .message.assistant").last()).toContainText("Saved note");
  await inbox.close();
  expect(errors).toEqual([]);
});

test("a card the chat moved on from is decided in the inbox and its answer joins the chat", async ({ page }) => {
  await signIn(page);
  await newConversation(page, "/note Call the miller");
  await expect(page.locator(".approval-card")).toBeVisible();
  const id = page.url().split("/c/")[1].split("?")[0];
  // An ordinary chat keeps the run waiting when a new message comes.
  await send(page, "Something else first");
  await expect(page.locator(".approval-card")).toHaveCount(0);
  await expect(page.locator(".messages .message.assistant").last()).toContainText("Something else first");

  await page.goto("/runs");
  await waitForHydration(page);
  const item = page.locator(".inbox-item").filter({ has: page.locator(`a[href="/c/${id}"]`) });
  await expect(item.locator(".moved-on")).toContainText("The chat has moved on since.");
  await item.getByRole("button", { name: "Apply" }).click();
  await expect(item).toHaveCount(0);
  await page.goto(`/c/${id}`);
  const last = page.locator(".messages .message.assistant").last();
  await expect(async () => {
    await page.reload();
    await expect(last.locator(".note")).toHaveText("Carried on after a decision in the runs inbox:", { timeout: 1000 });
  }).toPass({ timeout: 15_000 });
  await expect(last).toContainText("Saved note");
});

test.describe("in German", () => {
  test.use({ locale: "de-DE" });

  test("the inbox speaks German", async ({ page }) => {
    await signIn(page);
    await pickLanguage(page, "DE");
    await page.getByRole("button", { name: "Neue Unterhaltung" }).click();
    await waitForHydration(page);
    await page.getByLabel("Nachricht").fill("/note Mehl bestellen");
    await page.getByRole("button", { name: "Senden" }).click();
    await expect(page.locator(".approval-card")).toBeVisible();
    const id = page.url().split("/c/")[1].split("?")[0];
    await page.getByRole("link", { name: "Wartend" }).click();
    await expect(page.getByRole("heading", { name: "Wartet auf dich" })).toBeVisible();
    await waitForHydration(page);
    const item = page.locator(".inbox-item").filter({ has: page.locator(`a[href="/c/${id}"]`) });
    await expect(item.locator(".waits")).toContainText("Wartet auf Freigabe");
    await expect(item.locator(".approval-card").getByRole("button")).toHaveText(["Übernehmen", "Abbrechen"]);
    await shoot(page, "inbox-de");
    await item.getByRole("button", { name: "Abbrechen" }).click();
    await expect(item).toHaveCount(0);
    await pickLanguage(page, "EN");
  });
});
