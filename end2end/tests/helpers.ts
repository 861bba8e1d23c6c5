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
  await page.getByLabel("User name").fill(DEMO_USER);
  await page.getByLabel("Password").fill(DEMO_PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("button", { name: "New conversation" })).toBeVisible();
}
