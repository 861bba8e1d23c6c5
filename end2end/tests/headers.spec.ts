import { expect, Page, test } from "@playwright/test";
import { createServer } from "node:http";
import { AddressInfo } from "node:net";
import { BASE_URL } from "../playwright.config";
import { newConversation, pickLanguage, signIn, waitForHydration, watchPageErrors } from "./helpers";

// Records every Content-Security-Policy violation a page reports, from its first script on.
async function watchViolations(page: Page): Promise<() => Promise<string[]>> {
  const console: string[] = [];
  page.on("console", (message) => {
    if (message.text().includes("Content Security Policy")) console.push(message.text());
  });
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __violations: string[] }).__violations = seen;
    document.addEventListener("securitypolicyviolation", (event) =>
      seen.push(`${event.violatedDirective} ${event.blockedURI} ${event.sourceFile}:${event.lineNumber}`),
    );
  });
  return async () => {
    const inPage = await page.evaluate(() => (window as unknown as { __violations?: string[] }).__violations ?? []);
    return [...inPage, ...console];
  };
}

async function visitEveryPage(page: Page, violations: () => Promise<string[]>, conversation: string) {
  // Ends on a page with the header, where the language is picked.
  const paths = ["/no-such-page", conversation, "/runs", "/tools", "/pages", "/pages/1", "/account", "/admin", "/admin/webhooks", "/audit", "/"];
  for (const path of paths) {
    await page.goto(path);
    // Every page hydrates its islands (or has none) under the policy: the WASM ran.
    await waitForHydration(page);
    expect(await violations(), path).toEqual([]);
  }
}

test("every page loads and hydrates with no policy violation, in English and German", async ({ page }) => {
  const errors = watchPageErrors(page);
  const violations = await watchViolations(page);
  await page.goto("/login");
  await waitForHydration(page);
  expect(await violations()).toEqual([]);
  await signIn(page);
  // A conversation with a card in it, and one with a question: both kinds of pause on the page.
  await newConversation(page, "/note Policy check");
  await expect(page.locator(".approval-card")).toBeVisible();
  const withCard = new URL(page.url()).pathname;
  await newConversation(page, "/choose");
  await expect(page.locator(".reply-options")).toBeVisible();
  expect(await violations()).toEqual([]);

  await visitEveryPage(page, violations, withCard);
  await pickLanguage(page, "DE");
  await visitEveryPage(page, violations, withCard);
  await pickLanguage(page, "EN");
  expect(errors).toEqual([]);
});

test("a page on another origin that frames a card gets a blocked frame", async ({ page }) => {
  await signIn(page);
  await newConversation(page, "/note Framed?");
  const card = page.locator(".approval-card");
  await expect(card.getByRole("button", { name: "Apply" })).toBeVisible();
  const chat = new URL(page.url()).pathname;

  // Same site (the host is the same; SameSite=Lax lets the session cookie through), another
  // origin: a real server on this machine, since Chromium keeps a page it cannot place on the
  // network (a routed one) from loading local addresses at all.
  const base = new URL(BASE_URL);
  const framing = createServer((_, response) => {
    response.setHeader("content-type", "text/html");
    response.end(`<!DOCTYPE html><title>framer</title><iframe src="${BASE_URL}${chat}" width="800" height="600"></iframe>`);
  });
  await new Promise<void>((resolve) => framing.listen(0, base.hostname, resolve));
  const framer = `http://${base.hostname}:${(framing.address() as AddressInfo).port}/`;
  const framed = page.waitForResponse((response) => response.url() === `${BASE_URL}${chat}`);
  await page.goto(framer);
  // The server answered the frame's request; the browser refused to show it.
  const response = await framed;
  expect(response.headers()["x-frame-options"]).toBe("DENY");
  expect(response.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
  const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
  expect(frame).toBeDefined();
  await expect.poll(() => frame!.url()).not.toBe(`${BASE_URL}${chat}`);
  expect(await frame!.locator(".approval-card").count()).toBe(0);

  framing.close();

  // The card is still there to decide, where it belongs.
  await page.goto(chat);
  await waitForHydration(page);
  await expect(page.locator(".approval-card").getByRole("button", { name: "Apply" })).toBeVisible();
});
