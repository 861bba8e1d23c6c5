import { expect, Page, test } from "@playwright/test";
import { newConversation, signIn, waitForHydration, watchPageErrors } from "./helpers";

// Issue 40: the chat on a phone and on a desktop. Nothing is wider than the screen, on a narrow
// one every control of the chat is at least 44 px to tap, and the list of conversations waits
// behind its button there. Screenshots of the viewport go to screenshots/reference/.

const PHONE = { width: 375, height: 812 };
const DESKTOP = { width: 1280, height: 800 };

async function noHorizontalOverflow(page: Page) {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  expect(scrollWidth, "the page is no wider than the screen").toBeLessThanOrEqual(innerWidth);
}

/** Every visible button, summary and link of the chat that is smaller than 44 px both ways. A link
 *  inside a message's text is part of a sentence (WCAG 2.5.8 leaves those out). */
async function smallTargets(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const controls = document.querySelectorAll(".chat-layout :is(button, summary, a, label.attach-button)");
    const small: string[] = [];
    for (const element of controls) {
      if (element.closest(".body")) continue;
      const box = element.getBoundingClientRect();
      const style = getComputedStyle(element);
      if (box.width === 0 || box.height === 0 || style.visibility === "hidden") continue;
      if (box.height < 44 && box.width < 44) small.push(`${element.outerHTML.slice(0, 80)} ${box.width}x${box.height}`);
      else if (box.height < 44) small.push(`${element.outerHTML.slice(0, 80)} is ${box.height} px high`);
    }
    return small;
  });
}

async function check(page: Page, name: string, phone: boolean) {
  await noHorizontalOverflow(page);
  if (phone) expect(await smallTargets(page)).toEqual([]);
  await page.screenshot({ path: `screenshots/reference/${phone ? "mobile" : "desktop"}-${name}.png` });
}

for (const [label, viewport] of [
  ["mobile", PHONE],
  ["desktop", DESKTOP],
] as const) {
  test.describe(`${label} ${viewport.width}×${viewport.height}`, () => {
    test.use({ viewport });
    const phone = label === "mobile";

    test("the chat with a question, with a card, the runs and a content page fit the screen", async ({ page }) => {
      const errors = watchPageErrors(page);
      await signIn(page);
      await newConversation(page, "/choose");
      await expect(page.locator(".reply-options")).toBeVisible();
      await check(page, "question", phone);

      await newConversation(page, "/note A stop on the walk");
      await expect(page.locator(".approval-card")).toBeVisible();
      await check(page, "card", phone);

      await page.goto("/runs");
      await waitForHydration(page);
      await check(page, "runs", phone);

      await page.goto("/pages/1");
      await waitForHydration(page);
      await check(page, "page", phone);
      expect(errors).toEqual([]);
    });

    test("the list of conversations opens and closes with its button on a phone, and is always there on a desktop", async ({
      page,
    }) => {
      await signIn(page);
      await newConversation(page, "Hello from a small screen");
      await expect(page.locator(".messages .message.assistant")).toContainText("Hello from a small screen");
      const toggle = page.locator(".conversations-toggle > summary");
      const entry = page.locator(".conversation-list a[aria-current=page]");
      if (!phone) {
        await expect(toggle).toBeHidden();
        await expect(entry).toBeVisible();
        await expect(page.getByRole("link", { name: "Hello from a small screen" }).first()).toBeVisible();
        return;
      }
      await expect(page.getByRole("button", { name: "New conversation" })).toBeVisible();
      await expect(toggle).toHaveText("Conversations");
      await expect(toggle).toHaveAttribute("aria-controls", "conversation-list");
      await expect(page.locator("#conversation-list")).toHaveCount(1);
      await expect(toggle).toHaveAttribute("aria-expanded", "false");
      await expect(entry).toBeHidden();

      await toggle.click();
      await expect(toggle).toHaveAttribute("aria-expanded", "true");
      await expect(entry).toBeVisible();
      await noHorizontalOverflow(page);
      expect(await smallTargets(page)).toEqual([]);
      await page.screenshot({ path: "screenshots/reference/mobile-list-open.png" });

      await toggle.click();
      await expect(toggle).toHaveAttribute("aria-expanded", "false");
      await expect(entry).toBeHidden();
    });
  });
}

test.describe("without JavaScript on a phone", () => {
  test.use({ viewport: PHONE, javaScriptEnabled: false });

  test("the list still opens with its button", async ({ page }) => {
    await signIn(page, false);
    await page.getByRole("button", { name: "New conversation" }).click();
    await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
    const entry = page.locator(".conversation-list a[aria-current=page]");
    await expect(entry).toBeHidden();
    await page.locator(".conversations-toggle > summary").click();
    await expect(entry).toBeVisible();
    await noHorizontalOverflow(page);
  });
});
