import { expect, test } from "@playwright/test";
import { newConversation, send, shoot, signIn, waitForHydration, watchPageErrors, pickLanguage } from "./helpers";

test.beforeEach(async ({ page }) => {
  await signIn(page);
});

test("a choice is answered with a reply button, by keyboard, and focus goes back to the input", async ({ page }) => {
  const errors = watchPageErrors(page);
  await newConversation(page, "/choose");
  const group = page.getByRole("group", { name: "Reply options" });
  await expect(group).toBeVisible();
  await expect(group.getByRole("button")).toHaveText(["Home", "About us", "Contact"]);
  await expect(group).toContainText("A message of your own ends the question.");
  await expect(page.locator(".messages .message.assistant").last()).toHaveText(/Which page should we look at first\?/);
  await shoot(page, "question-choice");

  // Keyboard only: focus the first option, Tab to the second, press Enter.
  await group.getByRole("button", { name: "Home" }).focus();
  await page.keyboard.press("Tab");
  await expect(group.getByRole("button", { name: "About us" })).toBeFocused();
  await page.keyboard.press("Enter");

  await expect(page.locator(".messages .message.user").last()).toHaveText(/About us/);
  await expect(page.locator(".messages .message.assistant").last()).toContainText("The user picked: About us");
  await expect(group).toHaveCount(0);
  // Once answered, the buttons are gone and the reader goes on in the chat input.
  await expect(page.getByLabel("Message")).toBeFocused();
  expect(errors).toEqual([]);
});

test("typed text answers a choice that takes free text", async ({ page }) => {
  await newConversation(page, "/feedback");
  const group = page.getByRole("group", { name: "Reply options" });
  await expect(group.getByRole("button")).toHaveText(["Good", "Okay", "Not yet"]);
  await expect(group).toContainText("Or write your own answer below.");
  await send(page, "The buttons are lovely");
  await expect(page.locator(".messages .message.assistant").last()).toContainText("The user wrote: The buttons are lovely");
  await shoot(page, "question-free-text-answered");
});

test("a form question is answered with its fields", async ({ page }) => {
  await newConversation(page, "/contact");
  const group = page.getByRole("group", { name: "Reply options" });
  await expect(group.getByLabel("Company name")).toBeVisible();
  await shoot(page, "question-form");
  await group.getByLabel("Company name").fill("Bäckerei Sonnenkorn");
  await group.getByLabel("Employees").fill("12");
  await group.getByLabel("Offer a newsletter").check();
  await group.getByLabel("Region").selectOption("Baden");
  await group.getByRole("button", { name: "Send answer" }).click();
  await expect(page.locator(".messages .message.user").last()).toHaveText(
    /Company name: Bäckerei Sonnenkorn\s+Employees: 12\s+Offer a newsletter: Yes\s+Region: Baden/,
  );
  await expect(page.locator(".messages .message.assistant").last()).toContainText('"employees":12');
});

test("a value outside the schema's bounds gets its sentence beside its field, tied to it for screen readers", async ({
  page,
}) => {
  const errors = watchPageErrors(page);
  await newConversation(page, "/contact");
  const group = page.getByRole("group", { name: "Reply options" });
  const employees = group.getByLabel("Employees");
  await group.getByLabel("Company name").fill("Bäckerei Sonnenkorn");
  await employees.fill("0");
  await group.getByRole("button", { name: "Send answer" }).click();

  // The schema's own reason (`minimum`), beside the field, and named by it.
  const problem = group.locator('.field-problem[data-field="employees"]');
  await expect(problem).toHaveText("Enter a number of at least 1.");
  await expect(employees).toHaveAttribute("aria-invalid", "true");
  await expect(employees).toHaveAttribute("aria-describedby", (await problem.getAttribute("id"))!);
  await expect(employees).toHaveAccessibleDescription("Enter a number of at least 1.");
  await expect(group.getByLabel("Company name")).not.toHaveAttribute("aria-invalid");
  // Nothing was recorded: the run still waits on the same question.
  await expect(page.locator(".messages .message.user")).toHaveCount(1);
  await expect(page.locator('.messages[data-status="awaiting_input"]')).toHaveCount(1);

  await employees.fill("3");
  await group.getByRole("button", { name: "Send answer" }).click();
  await expect(page.locator(".messages .message.user").last()).toHaveText(/Employees: 3/);
  expect(errors).toEqual([]);
});

test("a question or a card that appears is announced in a polite live region, in the reader's language", async ({
  page,
}) => {
  const errors = watchPageErrors(page);
  await newConversation(page, "/choose");
  const announcer = page.locator(".chat-panel .announcer");
  await expect(announcer).toHaveAttribute("aria-live", "polite");
  // Heard when it arrives over the event stream, not only with a page that already has it.
  await expect(announcer).toHaveText("The assistant asks: Which page should we look at first?");
  await page.getByRole("group", { name: "Reply options" }).getByRole("button", { name: "Home" }).click();
  await expect(page.getByRole("group", { name: "Reply options" })).toHaveCount(0);
  await expect(announcer).toHaveText("");

  await send(page, "/note Announce me");
  await expect(page.locator(".approval-card")).toBeVisible();
  await expect(announcer).toHaveText("Approval needed: demo_note");
  await pickLanguage(page, "DE");
  await expect(page.locator(".chat-panel .announcer")).toHaveText("Freigabe nötig: demo_note");
  await pickLanguage(page, "EN");
  expect(errors).toEqual([]);
});

test("a question the chat cannot show says so, and a message of one's own moves on", async ({ page }) => {
  await newConversation(page, "/upload");
  const group = page.getByRole("group", { name: "Reply options" });
  await expect(group).toContainText("The chat cannot show this question.");
  await expect(group).toContainText("A message of your own ends the question.");
  await expect(group.getByRole("button")).toHaveCount(0);
  await shoot(page, "question-unsupported");
  await send(page, "Skip that please");
  await expect(page.locator(".messages .message.assistant").last()).toContainText("You said: \u201cSkip that please\u201d");
  await expect(group).toHaveCount(0);
});

test("an approval card in an ordinary chat: Apply and Cancel", async ({ page }) => {
  const errors = watchPageErrors(page);
  await newConversation(page, "/note Order more flour");
  const card = page.locator(".approval-card");
  await expect(card.getByRole("heading", { name: "Planned step" })).toBeVisible();
  await expect(card.locator(".tool")).toHaveText("demo_note");
  await expect(card.locator(".marker.write")).toHaveText("Changes content");
  await expect(card.locator(".arguments")).toContainText("Order more flour");
  await expect(card.getByRole("button")).toHaveText(["Apply", "Cancel"]);
  await shoot(page, "approval-plain");
  await card.getByRole("button", { name: "Apply" }).click();
  await expect(page.locator(".messages .message.assistant").last()).toContainText("Saved note");
  await expect(card).toHaveCount(0);

  await send(page, "/note Never mind");
  await expect(card.getByRole("button", { name: "Cancel" })).toBeVisible();
  await card.getByRole("button", { name: "Cancel" }).click();
  await expect(page.locator(".messages .message.assistant").last()).toContainText("approval_denied");
  expect(errors).toEqual([]);
});

test.describe("in German", () => {
  test.use({ locale: "de-DE" });

  test("reply options and the card speak German", async ({ page }) => {
    await pickLanguage(page, "DE");
    await expect(page.getByRole("button", { name: "Neue Unterhaltung" })).toBeVisible();
    await waitForHydration(page);
    await page.getByRole("button", { name: "Neue Unterhaltung" }).click();
    await waitForHydration(page);
    await page.getByLabel("Nachricht").fill("/choose");
    await page.getByRole("button", { name: "Senden" }).click();
    const group = page.getByRole("group", { name: "Antwortmöglichkeiten" });
    await expect(group).toContainText("Eine eigene Nachricht beendet die Rückfrage.");
    await shoot(page, "question-choice-de");
    await page.getByLabel("Nachricht").fill("/note Mehl bestellen");
    await page.getByRole("button", { name: "Senden" }).click();
    const card = page.locator(".approval-card");
    await expect(card.getByRole("button")).toHaveText(["Übernehmen", "Abbrechen"]);
    await expect(card.getByRole("heading", { name: "Geplanter Schritt" })).toBeVisible();
    await shoot(page, "approval-plain-de");
    await card.getByRole("button", { name: "Abbrechen" }).click();
    await expect(card).toHaveCount(0);
    // Back to English for the other tests, which share the demo user.
    await pickLanguage(page, "EN");
    await expect(page.getByRole("button", { name: "New conversation" })).toBeVisible();
  });
});
