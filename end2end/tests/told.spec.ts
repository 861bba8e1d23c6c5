import { expect, Page, test } from "@playwright/test";
import { newConversation, pickLanguage, signIn, waitForHydration, watchPageErrors } from "./helpers";

// Being told that runs wait: the header's count and the page's title follow runs that start and
// stop waiting in another tab, the open inbox follows them, and a reader who opted in gets a
// browser notification. With the multi-process servers (E2E_DATABASE) the other tab is served by
// web process B, a third process runs the run, and process A's page hears of it (NOTIFY).
const SECOND = process.env.E2E_DATABASE ? `http://127.0.0.1:${process.env.E2E_SECOND_PORT ?? 3211}` : "";

const badge = (page: Page) => page.locator(".main-nav .waiting-link .count-badge");

async function shownCount(page: Page): Promise<number> {
  return (await badge(page).count()) === 0 ? 0 : Number(await badge(page).textContent());
}

/** Opens the inbox once its event stream is open, and what the header shows there then. */
async function openInbox(page: Page): Promise<number> {
  const listening = page.waitForResponse((response) => response.url().endsWith("/events/user"));
  await page.goto("/runs");
  await waitForHydration(page);
  expect((await listening).status()).toBe(200);
  // Runs earlier tests left waiting count too: the badge shows the inbox counted.
  await expect.poll(async () => (await shownCount(page)) - (await page.locator(".inbox-item").count())).toBe(0);
  return shownCount(page);
}

async function expectCount(page: Page, count: number) {
  if (count === 0) {
    await expect(badge(page)).toHaveCount(0);
    await expect(page).toHaveTitle("Tourguide");
  } else {
    await expect(badge(page)).toHaveText(String(count));
    const label = count === 1 ? "1 run waits for you" : `${count} runs wait for you`;
    await expect(page.getByRole("link", { name: `Waiting (${label})` })).toBeVisible();
    await expect(page).toHaveTitle(`(${count}) Tourguide`);
  }
}

/** A card started in another tab (on process B with the multi-process servers). */
async function cardElsewhere(page: Page, note: string): Promise<{ other: Page; id: string }> {
  const other = await page.context().newPage();
  await other.goto(`${SECOND}/`);
  await waitForHydration(other);
  await newConversation(other, note);
  await expect(other.locator(".conversation .approval-card")).toBeVisible();
  return { other, id: other.url().split("/c/")[1].split("?")[0] };
}

test("the count and the title follow a run that starts and stops waiting in another tab", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  const before = await openInbox(page);
  await expectCount(page, before);

  const { other, id } = await cardElsewhere(page, "/note Told in another tab");
  // Without a reload: the count, the title, and the run in the open inbox.
  await expectCount(page, before + 1);
  const item = page.locator(".inbox-item").filter({ has: page.locator(`a[href="/c/${id}"]`) });
  await expect(item.locator(".approval-card .arguments")).toContainText("Told in another tab");

  // Decided in the other tab: gone here too.
  await other.locator(".conversation .approval-card").getByRole("button", { name: "Apply" }).click();
  await expect(other.locator(".messages .message.assistant").last()).toContainText("Saved note");
  await expectCount(page, before);
  await expect(item).toHaveCount(0);
  // Every page has the count, rendered with the page.
  await other.goto(`${SECOND}/tools`);
  await expectCount(other, before);
  await other.close();
  expect(errors).toEqual([]);
});

test("a reader who opted in is notified of a run that waits, and nothing is asked before", async ({ page }) => {
  await page.context().grantPermissions(["notifications"]);
  // Records what the page asks and shows instead of the browser's own notifications.
  await page.context().addInitScript(() => {
    type Told = { asked: number; shown: { title: string; tag?: string }[]; last?: { onclick?: () => void } };
    const told: Told = { asked: 0, shown: [] };
    // What the reader allowed lasts beyond the page, as the browser's own permission does.
    const key = "test.notification-permission";
    class RecordedNotification {
      onclick?: () => void;
      constructor(title: string, options?: { tag?: string }) {
        told.shown.push({ title, tag: options?.tag });
        told.last = this;
      }
      static get permission() {
        return localStorage.getItem(key) ?? "default";
      }
      static requestPermission() {
        told.asked += 1;
        localStorage.setItem(key, "granted");
        return Promise.resolve("granted");
      }
      close() {}
    }
    Object.assign(window, { __told: told, Notification: RecordedNotification });
  });
  type Told = { asked: number; shown: { title: string }[] };
  const told = () => page.evaluate(() => (window as unknown as { __told: Told }).__told);
  const errors = watchPageErrors(page);
  await signIn(page);
  await page.goto("/account");
  await waitForHydration(page);
  expect((await told()).asked, "no page asks on load").toBe(0);
  const toggle = page.getByRole("button", { name: "Notify me in this browser" });
  await toggle.click();
  await expect(page.getByRole("button", { name: "Stop notifying me in this browser" })).toBeVisible();
  expect((await told()).asked).toBe(1);
  expect(await page.evaluate(() => localStorage.getItem("tourguide.notify"))).toBe("on");

  const before = await openInbox(page);
  expect((await told()).asked, "nor does any other page").toBe(0);
  const { other, id } = await cardElsewhere(page, "/note Tell me in a notification");
  await expectCount(page, before + 1);
  await expect.poll(async () => (await told()).shown.map((shown) => shown.title)).toEqual([
    "Tourguide: a run waits for your approval — /note Tell me in a notification",
  ]);
  // A click opens the card.
  await page.evaluate(() => (window as unknown as { __told: { last: { onclick: () => void } } }).__told.last.onclick());
  await expect(page).toHaveURL(new RegExp(`/c/${id}$`));
  await expect(page.locator(".conversation .approval-card")).toBeVisible();

  // Turned off, it stays off in this browser.
  await page.goto("/account");
  await waitForHydration(page);
  await page.getByRole("button", { name: "Stop notifying me in this browser" }).click();
  await expect(toggle).toBeVisible();
  expect(await page.evaluate(() => localStorage.getItem("tourguide.notify"))).toBeNull();
  await other.locator(".conversation .approval-card").getByRole("button", { name: "Cancel" }).click();
  await expect(other.locator(".conversation .approval-card")).toHaveCount(0);
  await other.close();
  expect(errors).toEqual([]);
});

test.describe("in German", () => {
  test.use({ locale: "de-DE" });

  test("the count speaks German", async ({ page }) => {
    await signIn(page);
    await pickLanguage(page, "DE");
    const before = await openInbox(page);
    const other = await page.context().newPage();
    await other.goto(`${SECOND}/`);
    await waitForHydration(other);
    await other.getByRole("button", { name: "Neue Unterhaltung" }).click();
    await waitForHydration(other);
    await other.getByLabel("Nachricht").fill("/note Mehl bestellen");
    await other.getByRole("button", { name: "Senden" }).click();
    const card = other.locator(".conversation .approval-card");
    await expect(card).toBeVisible();
    const count = before + 1;
    const label = count === 1 ? "1 Lauf wartet auf dich" : `${count} Läufe warten auf dich`;
    await expect(page.getByRole("link", { name: `Wartend (${label})` })).toBeVisible();
    await expect(page).toHaveTitle(`(${count}) Tourguide`);
    await card.getByRole("button", { name: "Abbrechen" }).click();
    await expect(card).toHaveCount(0);
    await expect(badge(page)).toHaveCount(before === 0 ? 0 : 1);
    await other.close();
    await pickLanguage(page, "EN");
  });
});
