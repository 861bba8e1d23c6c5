import { expect, Page } from "@playwright/test";

export const DEMO_USER = "demo";
export const DEMO_PASSWORD = "e2e-demo-password";

/** Collects uncaught page errors (a hydration panic shows up here) for an assertion at the end. */
export function watchPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  return errors;
}

export async function waitForHydration(page: Page) {
  await expect(page.locator("body[data-hydrated]")).toBeAttached();
}

export async function signIn(page: Page, hydrated = true) {
  await page.goto("/login");
  if (hydrated) await waitForHydration(page);
  // By name, not by label: the page may be in either language.
  await page.locator("input[name=username]").fill(DEMO_USER);
  await page.locator("input[name=password]").fill(DEMO_PASSWORD);
  await page.locator(".login-form button[type=submit]").click();
  await expect(page.locator(".new-conversation button")).toBeVisible();
}

/** Opens a new conversation on the full chat page and sends a first message. */
export async function newConversation(page: Page, message: string) {
  // From a page that already shows a conversation, its address matches at once: wait for another.
  const before = page.url();
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await expect(page).not.toHaveURL(before);
  await expect(page.locator(".messages .message")).toHaveCount(0);
  await waitForHydration(page);
  await send(page, message);
}

export async function send(page: Page, message: string) {
  await page.getByLabel("Message").fill(message);
  await page.getByRole("button", { name: "Send" }).click();
}

export async function shoot(page: Page, name: string) {
  await page.screenshot({ path: `screenshots/${name}.png`, fullPage: true });
}

/**
 * Picks the user's language in the header and waits for the page it leads back to (the header is
 * not an island: its form is a plain post, answered with a redirect back). Waiting for a
 * text instead races: with a German browser the page may already be German before the choice,
 * and a navigation started then is cut off by the reload.
 */
export async function pickLanguage(page: Page, code: "EN" | "DE") {
  await waitForHydration(page);
  // Both waits start before the click: the reload may finish before a later wait would begin.
  const saved = page.waitForResponse((response) => response.url().includes("/api/set_language"));
  const reloaded = page.waitForEvent("load");
  await page.getByRole("button", { name: code, exact: true }).click();
  expect((await saved).status()).toBeLessThan(400);
  await reloaded;
  await waitForHydration(page);
  await expect(page.locator("html")).toHaveAttribute("lang", code.toLowerCase());
}
