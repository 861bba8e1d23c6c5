import { expect, Page, test } from "@playwright/test";
import { shoot, signIn, waitForHydration, watchPageErrors, pickLanguage } from "./helpers";

/** The value a pending write would set, read from the card's arguments. */
async function proposedValue(page: Page, key: "value" | "alt"): Promise<string> {
  const text = (await page.locator(".approval-card .arguments").first().textContent()) ?? "";
  const args = JSON.parse(text);
  return String(args[key]);
}

test("a full guided tour beside the page: choose, variant, apply, skip, finish", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await page.goto("/pages");
  await waitForHydration(page);
  await page.locator(".page-list a").first().click();
  await expect(page).toHaveURL(/\/pages\/1$/);
  await waitForHydration(page);
  const seedTitle = await page.locator("[data-field=title]").innerText();
  const seedLink = await page.locator(".block.link").innerText();
  await shoot(page, "content-page");

  await page.getByRole("button", { name: "Start a guided tour" }).click();
  await expect(page).toHaveURL(/\/pages\/1\?c=[0-9a-f-]{36}$/);
  const panel = page.getByRole("complementary", { name: "Chat about this page" });
  const options = panel.getByRole("group", { name: "Reply options" });
  await expect(options.getByRole("button")).toHaveText([
    "1. Title too long",
    "2. Description missing",
    "3. Image without alt text",
    "4. Vague link text",
  ]);
  await expect(panel.locator(".message.assistant").last()).toHaveText(/Which point should we start with\?/);
  await shoot(page, "tour-start-question");

  await options.getByRole("button", { name: "1. Title too long" }).click();
  const card = panel.locator(".approval-card");
  await expect(card.getByRole("button")).toHaveText(["Apply", "Another variant", "Skip"]);
  await expect(card.locator(".marker.write")).toBeVisible();
  const first = await proposedValue(page, "value");
  await shoot(page, "tour-card-process");

  await card.getByRole("button", { name: "Another variant" }).click();
  await expect(panel.locator(".message.user").last()).toHaveText(/Another variant/);
  await expect(card.locator(".arguments")).not.toContainText(first);
  const variant = await proposedValue(page, "value");
  expect(variant).not.toBe(first);

  await card.getByRole("button", { name: "Apply" }).click();
  // The page beside the chat shows the change as soon as it is applied.
  await expect(page.locator("[data-field=title]")).toHaveText(variant);
  expect(variant).not.toBe(seedTitle);

  // Next point: the description. Skip it.
  await expect(card.locator(".arguments")).toContainText('"field": "description"');
  await card.getByRole("button", { name: "Skip" }).click();
  await expect(panel.locator(".message.user").last()).toHaveText(/Skip/);

  // Next point: the image's alt text. Apply it.
  await expect(card.locator(".tool")).toHaveText("set_alt_text");
  const alt = await proposedValue(page, "alt");
  await card.getByRole("button", { name: "Apply" }).click();
  await expect(page.locator(".block.image .alt")).toHaveText(alt);

  // Last point: the vague link. Skip it.
  await expect(card.locator(".arguments")).toContainText('"field": "link_text"');
  await card.getByRole("button", { name: "Skip" }).click();

  const end = panel.getByRole("group", { name: "Reply options" });
  await expect(end.getByRole("button")).toHaveText(["Summary", "Next page"]);
  await end.getByRole("button", { name: "Summary" }).click();
  await expect(panel.locator(".message.assistant").last()).toContainText(variant);
  await shoot(page, "tour-summary");

  // The page changed exactly as approved: the title and the alt text, nothing else.
  await page.reload();
  await expect(page.locator("[data-field=title]")).toHaveText(variant);
  await expect(page.locator("[data-field=description]")).toHaveText("(empty)");
  await expect(page.locator(".block.image .alt")).toHaveText(alt);
  await expect(page.locator(".block.link")).toHaveText(seedLink);

  // The same conversation on the full chat page renders with the same components.
  const conversation = new URL(page.url()).searchParams.get("c");
  await page.goto(`/c/${conversation}`);
  await expect(page.locator(".conversation .message.user").filter({ hasText: "Another variant" })).toHaveCount(1);
  await expect(page.locator(".conversation .message.assistant").last()).toContainText(variant);
  expect(errors).toEqual([]);
});

test.describe("in German", () => {
  test.use({ locale: "de-DE" });

  test("a proposal in a German tour offers Übernehmen, Andere Variante and Überspringen", async ({ page }) => {
    await signIn(page);
    await pickLanguage(page, "DE");
    await expect(page.getByRole("button", { name: "Neue Unterhaltung" })).toBeVisible();
    await page.goto("/pages/2");
    await waitForHydration(page);
    await page.getByRole("button", { name: "Rundgang starten" }).click();
    const panel = page.getByRole("complementary", { name: "Chat zu dieser Seite" });
    const options = panel.getByRole("group", { name: "Antwortmöglichkeiten" });
    await expect(panel.locator(".message.assistant").last()).toHaveText(/Mit welchem Punkt sollen wir anfangen\?/);
    await options.getByRole("button").first().click();
    const card = panel.locator(".approval-card");
    await expect(card.getByRole("button")).toHaveText(["Übernehmen", "Andere Variante", "Überspringen"]);
    await shoot(page, "tour-card-process-de");
    await card.getByRole("button", { name: "Überspringen" }).click();
    await expect(panel.locator(".message.user").filter({ hasText: "Überspringen" })).toHaveCount(1);
    // Back to English for the other tests, which share the demo user.
    await pickLanguage(page, "EN");
    await expect(page.getByRole("button", { name: "Start a guided tour" })).toBeVisible();
  });
});
