import { expect, Page, test } from "@playwright/test";
import { pickLanguage, shoot, signIn, waitForHydration, watchPageErrors } from "./helpers";

/** The value the card's write would set, read from its technical details. */
async function proposedValue(card: ReturnType<Page["locator"]>, key: "value" | "alt" = "value"): Promise<string> {
  const text = (await card.locator(".arguments").first().textContent()) ?? "";
  return String(JSON.parse(text)[key]);
}

/** Starts a tour beside a content page and answers its first question with the first point. */
async function tourCard(page: Page, pageId: number, startLabel = "Start a guided tour", panelName = "Chat about this page") {
  await page.goto(`/pages/${pageId}`);
  await waitForHydration(page);
  await page.getByRole("button", { name: startLabel }).click();
  const panel = page.getByRole("complementary", { name: panelName });
  const options = panel.locator(".reply-options").first();
  await options.getByRole("button").first().click();
  const card = panel.locator(".approval-card");
  await expect(card.locator(".preview")).toBeVisible();
  return { panel, card };
}

test("a card shows the change; a page edited elsewhere gives the stale sentence and a fresh preview", async ({ page, context }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await page.goto("/pages/3");
  await waitForHydration(page);
  const before = await page.locator("[data-field=description]").innerText();
  const { panel, card } = await tourCard(page, 3);

  // The field, its text now and the proposal side by side, the words that change marked; the
  // arguments one click away.
  await expect(card.locator(".change .field")).toHaveText("Meta description");
  await expect(card.locator(".before .text")).toHaveText(before);
  const proposed = await proposedValue(card);
  await expect(card.locator(".after .text")).toHaveText(proposed);
  await expect(card.locator(".after ins").first()).toBeVisible();
  const details = card.locator(".call details");
  await expect(details.locator("summary")).toHaveText("Show technical details");
  await expect(details.locator(".arguments")).toBeHidden();
  await details.locator("summary").click();
  await expect(details.locator(".arguments")).toBeVisible();
  await shoot(page, "preview-card");

  // Elsewhere, in a second tab: another tour of the same page applies another description.
  const other = await context.newPage();
  const second = await tourCard(other, 3);
  await second.card.getByRole("button", { name: "Another variant" }).click();
  await expect(second.card.locator(".arguments")).not.toHaveText(new RegExp(`"${proposed}"`));
  const elsewhere = await proposedValue(second.card);
  expect(elsewhere).not.toBe(proposed);
  await second.card.getByRole("button", { name: "Apply" }).click();
  await expect(other.locator("[data-field=description]")).toHaveText(elsewhere);
  await other.close();

  // Back in the first tab: Apply is refused, nothing is written, the card shows the page as it is.
  await card.getByRole("button", { name: "Apply" }).click();
  await expect(panel.locator(".error.notice")).toHaveText(
    "The page changed since this was proposed, so nothing was written. The preview shows its current state — check it and decide again.",
  );
  await expect(card.locator(".before .text")).toHaveText(elsewhere);
  await expect(card.locator(".after .text")).toHaveText(proposed);
  await shoot(page, "preview-stale");
  await page.reload();
  await waitForHydration(page);
  await expect(page.locator("[data-field=description]")).toHaveText(elsewhere);

  // The fresh preview applies, and the page beside the chat shows it.
  await panel.locator(".approval-card").getByRole("button", { name: "Apply" }).click();
  await expect(page.locator("[data-field=description]")).toHaveText(proposed);
  await expect(panel.locator(".error.notice")).toHaveCount(0);
  expect(errors).toEqual([]);
});

test.describe("in German", () => {
  test.use({ locale: "de-DE" });

  test("the preview names the field and its sides in German", async ({ page }) => {
    await signIn(page);
    await pickLanguage(page, "DE");
    await page.goto("/pages/5");
    await waitForHydration(page);
    const before = await page.locator("[data-field=description]").innerText();
    const { panel, card } = await tourCard(page, 5, "Rundgang starten", "Chat zu dieser Seite");
    await expect(card.locator(".change .field")).toHaveText("Meta-Beschreibung");
    await expect(card.locator(".before .side-label")).toHaveText("Bisher");
    await expect(card.locator(".after .side-label")).toHaveText("Neu");
    await expect(card.locator(".before .text")).toHaveText(before);
    await expect(card.locator(".call details summary")).toHaveText("Technische Details anzeigen");
    await expect(card.getByRole("button")).toHaveText(["Übernehmen", "Andere Variante", "Überspringen"]);
    await shoot(page, "preview-card-de");
    await card.getByRole("button", { name: "Überspringen" }).click();
    await expect(panel.locator(".message.user").filter({ hasText: "Überspringen" })).toHaveCount(1);
    // Back to English for the other tests, which share the demo user.
    await pickLanguage(page, "EN");
  });
});
