import { expect, Page, test } from "@playwright/test";
import { send, signIn, waitForHydration, watchPageErrors } from "./helpers";

// Issue 40: a file comes by the paperclip (the file input's label), by a drop on the composer or
// by a paste into its box; files waiting for the next message are chips, each removable.

/** Fires `type` at `selector` with a file built in the page, as a drop or a paste would carry it. */
async function deliver(page: Page, selector: string, type: "drop" | "paste", name: string, text: string) {
  await page.locator(selector).evaluate(
    (target, { type, name, text }) => {
      const data = new DataTransfer();
      data.items.add(new File([text], name, { type: "text/plain" }));
      const event =
        type === "drop"
          ? new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true })
          : new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true });
      target.dispatchEvent(event);
    },
    { type, name, text },
  );
}

test("files dropped, pasted and chosen become chips; a chip's remove takes it back; sending attaches the rest", async ({
  page,
}) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await waitForHydration(page);

  // With the WASM the paperclip is the only control: the form's own button is for pages without it.
  await expect(page.locator(".attach-form .attach-submit")).toBeHidden();
  const chips = page.locator(".pending-attachments .chip");

  await deliver(page, ".drop-zone", "drop", "dropped.txt", "Dropped on the composer.");
  await expect(chips).toHaveCount(1);
  await expect(chips.first()).toContainText("dropped.txt");

  await deliver(page, ".composer textarea", "paste", "pasted.md", "# Pasted\ninto the box");
  await expect(chips).toHaveCount(2);
  await expect(chips.nth(1)).toContainText("pasted.md");

  // The paperclip opens the chooser (it labels the file input); a chosen file goes at once.
  const chooser = page.waitForEvent("filechooser");
  await page.locator(".attach-button").click();
  await (await chooser).setFiles({ name: "chosen.txt", mimeType: "text/plain", buffer: Buffer.from("Chosen.") });
  await expect(chips).toHaveCount(3);

  await page.getByRole("button", { name: "Remove pasted.md" }).click();
  await expect(chips).toHaveCount(2);
  await expect(page.locator(".pending-attachments")).not.toContainText("pasted.md");

  // A paste of plain text stays text in the box, and attaches nothing.
  const box = page.getByLabel("Message");
  await box.focus();
  await box.evaluate((element) => {
    const data = new DataTransfer();
    data.setData("text/plain", "typed");
    element.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  });
  await page.waitForTimeout(300);
  await expect(chips).toHaveCount(2);

  await send(page, "Here are the files");
  const sent = page.locator(".messages .message.user").last();
  await expect(sent.locator(".attachments a")).toHaveText(["dropped.txt", "chosen.txt"]);
  await expect(page.locator(".pending-attachments")).toHaveCount(0);

  // A file the server refuses says why beside the paperclip, and nothing waits.
  await deliver(page, ".drop-zone", "drop", "sheet.xlsx", "plain text, not a workbook");
  await expect(page.locator(".attach-bar [role=alert]")).toContainText("does not match its name");
  await expect(page.locator(".pending-attachments")).toHaveCount(0);
  expect(errors).toEqual([]);
});
