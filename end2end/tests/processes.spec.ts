import { expect, test } from "@playwright/test";
import { newConversation, signIn, waitForHydration, watchPageErrors } from "./helpers";

// Runs when the suite runs against PostgreSQL with two web processes and a worker
// (scripts/e2e-servers): the page is served by web process A, the answer goes through web process
// B, a third process carries the run on, and A's page follows without a reload.
const SECOND = process.env.E2E_DATABASE ? `http://127.0.0.1:${process.env.E2E_SECOND_PORT ?? 3211}` : undefined;

test("a page served by one process follows an answer posted through another", async ({ page, context, request }) => {
  test.skip(!SECOND, "needs the multi-process servers (E2E_DATABASE)");
  const errors = watchPageErrors(page);
  await expect(async () => expect((await request.get(`${SECOND}/login`)).status()).toBe(200)).toPass({ timeout: 30_000 });

  await signIn(page);
  await newConversation(page, "/choose");
  const group = page.getByRole("group", { name: "Reply options" });
  await expect(group.getByRole("button")).toHaveText(["Home", "About us", "Contact"]);

  // The same browser (cookies are per host, not per port) on process B, same conversation.
  const elsewhere = await context.newPage();
  await elsewhere.goto(`${SECOND}${new URL(page.url()).pathname}`);
  await waitForHydration(elsewhere);
  const there = elsewhere.getByRole("group", { name: "Reply options" });
  await there.getByRole("button", { name: "Contact" }).click();
  await expect(elsewhere.locator(".messages .message.assistant").last()).toContainText("The user picked: Contact");

  // Back on A, untouched since: the answer and the reply arrive through A's event stream.
  await expect(page.locator(".messages .message.user").last()).toHaveText(/Contact/);
  await expect(page.locator(".messages .message.assistant").last()).toContainText("The user picked: Contact");
  await expect(group).toHaveCount(0);
  await page.screenshot({ path: "screenshots/processes-answer-elsewhere.png", fullPage: true });
  expect(errors).toEqual([]);
});
