import { expect, Page, test } from "@playwright/test";
import { newConversation, signIn, waitForHydration, watchPageErrors } from "./helpers";

test.beforeEach(async ({ page }) => {
  await signIn(page);
});

/** A new conversation with nothing sent yet, hydrated. */
async function emptyConversation(page: Page) {
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await waitForHydration(page);
}

test("Enter sends, Shift+Enter breaks the line, and the box is ready for the next message", async ({ page }) => {
  const errors = watchPageErrors(page);
  await emptyConversation(page);
  const box = page.getByLabel("Message");
  const sendButton = page.getByRole("button", { name: "Send" });
  const sent = page.locator(".messages .message.user");

  // Nothing to send yet: the button waits for text, and spaces are no text.
  await expect(sendButton).toBeDisabled();
  await box.fill("   ");
  await expect(sendButton).toBeDisabled();
  await box.fill("");

  await box.pressSequentially("First line");
  await expect(sendButton).toBeEnabled();
  await box.press("Shift+Enter");
  await box.pressSequentially("second line");
  await expect(box).toHaveValue("First line\nsecond line");
  await expect(sent).toHaveCount(0);

  await box.press("Enter");
  await expect(sent).toHaveCount(1);
  await expect(sent.first()).toContainText("First line");
  await expect(sent.first()).toContainText("second line");
  await expect(box).toHaveValue("");
  await expect(box).toBeFocused();
  await expect(sendButton).toBeDisabled();
  await expect(page.locator(".messages .message.assistant")).toHaveCount(1);

  // Sent with the button, the focus comes back to the box.
  await box.fill("With the button");
  await sendButton.click();
  await expect(sent).toHaveCount(2);
  await expect(box).toHaveValue("");
  await expect(box).toBeFocused();
  expect(errors).toEqual([]);
});

test("an Enter that ends an input method's composition does not send", async ({ page }) => {
  await emptyConversation(page);
  const box = page.getByLabel("Message");
  await box.fill("にほん");
  // What Chromium reports while an IME composes: isComposing, and key code 229.
  await box.evaluate((element) => {
    element.dispatchEvent(new CompositionEvent("compositionstart", { bubbles: true }));
    element.dispatchEvent(
      new KeyboardEvent("keydown", { key: "Enter", code: "Enter", isComposing: true, bubbles: true, cancelable: true }),
    );
    element.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", keyCode: 229, bubbles: true, cancelable: true }));
    element.dispatchEvent(new CompositionEvent("compositionend", { bubbles: true, data: "日本" }));
  });
  // Give a send the time it would take, then check nothing went.
  await page.waitForTimeout(500);
  await expect(page.locator(".messages .message.user")).toHaveCount(0);
  await expect(box).toHaveValue("にほん");
  // The Enter after the composition sends.
  await box.press("Enter");
  await expect(page.locator(".messages .message.user")).toHaveCount(1);
});

test("the box grows with its text, up to a limit", async ({ page }) => {
  await emptyConversation(page);
  const box = page.getByLabel("Message");
  const height = async () => (await box.boundingBox())!.height;
  const empty = await height();
  await box.fill(Array.from({ length: 8 }, (_, i) => `line ${i}`).join("\n"));
  const grown = await height();
  expect(grown).toBeGreaterThan(empty + 40);
  await box.fill(Array.from({ length: 200 }, (_, i) => `line ${i}`).join("\n"));
  const viewport = page.viewportSize()!.height;
  expect(await height()).toBeLessThanOrEqual(viewport * 0.4 + 1);
});

test("after a reply button answers, the focus is back in the box", async ({ page }) => {
  await newConversation(page, "/choose");
  const group = page.getByRole("group", { name: "Reply options" });
  await group.getByRole("button", { name: "Home" }).click();
  await expect(group).toHaveCount(0);
  await expect(page.getByLabel("Message")).toBeFocused();
});

test("a form field that does not fit gets its own sentence beside it, and the form its answer", async ({ page }) => {
  const errors = watchPageErrors(page);
  await newConversation(page, "/contact");
  const group = page.getByRole("group", { name: "Reply options" });
  await expect(group.getByLabel("Company name")).toBeVisible();
  // The browser would hold back a fraction in a whole-number field itself; a client that does
  // not is told by the server.
  await group.locator("form.answer-form").evaluate((form: HTMLFormElement) => (form.noValidate = true));
  await group.getByLabel("Company name").fill("Bäckerei Sonnenkorn");
  await group.getByLabel("Employees").fill("1.5");
  await group.getByRole("button", { name: "Send answer" }).click();

  const problem = group.locator('.field-problem[data-field="employees"]');
  await expect(problem).toHaveText("Enter a whole number.");
  // Beside its field, and nowhere else.
  await expect(group.locator(".field", { has: page.getByLabel("Employees") }).locator(".field-problem")).toHaveText(
    "Enter a whole number.",
  );
  await expect(group.locator(".field-problem")).toHaveCount(1);
  await expect(page.locator(".chat-panel > .error")).toContainText("see the note beside each field");
  // What was typed stays, to be corrected.
  await expect(group.getByLabel("Company name")).toHaveValue("Bäckerei Sonnenkorn");
  await expect(page.locator(".messages .message.user")).toHaveCount(1);

  await group.getByLabel("Employees").fill("12");
  await group.getByRole("button", { name: "Send answer" }).click();
  await expect(page.locator(".messages .message.user").last()).toHaveText(/Employees: 12/);
  await expect(group).toHaveCount(0);
  await expect(page.getByLabel("Message")).toBeFocused();
  expect(errors).toEqual([]);
});
