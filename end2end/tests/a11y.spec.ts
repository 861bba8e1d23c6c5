import AxeBuilder from "@axe-core/playwright";
import { expect, Page, test } from "@playwright/test";
import { BASE_URL } from "../playwright.config";
import { newConversation, signIn, waitForHydration } from "./helpers";

// WCAG 2.1 A and AA, as axe-core checks them: contrast, landmarks, names and labels, roles.
const TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"];

/** Runs axe on the page as it stands and fails with each violation's rule, nodes and why. */
async function expectNoViolations(page: Page, where: string) {
  const results = await new AxeBuilder({ page }).withTags(TAGS).analyze();
  const found = results.violations.map((violation) => ({
    id: violation.id,
    impact: violation.impact,
    help: violation.help,
    nodes: violation.nodes.map((node) => ({ target: node.target.join(" "), summary: node.failureSummary })),
  }));
  // Soft: one run reports every page's violations, not only the first page's.
  expect.soft(found, `axe violations on ${where}:\n${JSON.stringify(found, null, 2)}`).toEqual([]);
}

async function visit(page: Page, path: string, where: string) {
  await page.goto(path);
  await waitForHydration(page);
  await expectNoViolations(page, where);
}

for (const scheme of ["light", "dark"] as const) {
  test(`every page passes axe (WCAG 2.1 A/AA) in English and German, ${scheme}`, async ({ browser }) => {
    test.setTimeout(180_000);
    // German by the browser's language, not by the user's choice: a choice stored for the shared
    // demo user would outlast this test (chat.spec.ts expects none).
    let paths: string[] = [];
    for (const [lang, locale] of [
      ["en", "en-US"],
      ["de", "de-DE"],
    ]) {
      const context = await browser.newContext({ baseURL: BASE_URL, locale, colorScheme: scheme });
      const page = await context.newPage();
      await page.goto("/login");
      await waitForHydration(page);
      await expect(page.locator("html")).toHaveAttribute("lang", lang);
      await expectNoViolations(page, `/login (${lang}, ${scheme})`);
      await signIn(page);
      await expect(page.locator("html")).toHaveAttribute("lang", lang);
      await expectNoViolations(page, `the chat without a conversation (${lang}, ${scheme})`);
      if (paths.length === 0) {
        // Both kinds of pause on the chat page: a question and an approval card.
        await newConversation(page, "/choose");
        await expect(page.locator(".reply-options")).toBeVisible();
        const withQuestion = new URL(page.url()).pathname;
        await newConversation(page, "/note Contrast check");
        await expect(page.locator(".approval-card")).toBeVisible();
        const withCard = new URL(page.url()).pathname;
        paths = ["/", withQuestion, withCard, "/runs", "/tools", "/pages", "/pages/1", "/account", "/admin", "/audit"];
      }
      for (const path of paths) await visit(page, path, `${path} (${lang}, ${scheme})`);
      await context.close();
    }
  });
}

test("the theme chosen on /account applies to every page over the system's, and System gives it back", async ({
  page,
}) => {
  const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  await page.emulateMedia({ colorScheme: "light" });
  await signIn(page);
  const light = await background();
  await page.goto("/account");
  await waitForHydration(page);
  const choice = page.locator(".theme-choice");
  await expect(choice).toBeVisible();
  await expect(choice.getByRole("radio", { name: "As the system" })).toBeChecked();

  await choice.getByRole("radio", { name: "Dark" }).check();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  const dark = await background();
  expect(dark).not.toBe(light);
  // Kept in this browser: the next page is dark too, though the system is light.
  await page.goto("/tools");
  await waitForHydration(page);
  await expect(page.locator("html")).toHaveAttribute("data-theme", "dark");
  expect(await background()).toBe(dark);

  // Light over a dark system.
  await page.emulateMedia({ colorScheme: "dark" });
  await page.goto("/account");
  await waitForHydration(page);
  await expect(choice.getByRole("radio", { name: "Dark" })).toBeChecked();
  await choice.getByRole("radio", { name: "Light" }).check();
  await expect(page.locator("html")).toHaveAttribute("data-theme", "light");
  expect(await background()).toBe(light);

  // The system's again: the attribute goes, and the dark system shows.
  await choice.getByRole("radio", { name: "As the system" }).check();
  await expect(page.locator("html")).not.toHaveAttribute("data-theme");
  expect(await background()).toBe(dark);
  await page.reload();
  await waitForHydration(page);
  await expect(page.locator("html")).not.toHaveAttribute("data-theme");
  expect(await background()).toBe(dark);
});

test("Escape closes the open menu and the message editor", async ({ page }) => {
  await signIn(page);
  await newConversation(page, "Escape check");
  await expect(page.locator(".messages .message.assistant").first()).toBeVisible();

  const menu = page.locator("details.conversation-actions");
  await menu.locator("summary").click();
  await expect(menu).toHaveAttribute("open", "");
  await menu.getByLabel("Title").focus();
  await page.keyboard.press("Escape");
  await expect(menu).not.toHaveAttribute("open");
  // Focus goes back to what opened it.
  await expect(menu.locator("summary")).toBeFocused();

  await page.locator(".message.user .edit-message").click();
  const editor = page.locator(".edit-form textarea");
  await editor.click();
  await page.keyboard.press("Escape");
  await expect(page.locator(".edit-form")).toHaveCount(0);
});
