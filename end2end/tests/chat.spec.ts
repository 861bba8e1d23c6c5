import { expect, test } from "@playwright/test";
import { newConversation, send, signIn, waitForHydration, watchPageErrors, pickLanguage } from "./helpers";

test("the chat page renders on the server before any script runs", async ({ request }) => {
  // Without a session the page redirects to sign-in; the sign-in page itself is server-rendered.
  const response = await request.get("/login");
  expect(response.status()).toBe(200);
  // `<!>` are the hydration markers Leptos writes between the parts of a view.
  const html = (await response.text()).replaceAll("<!>", "");
  expect(html).toContain("<h1>Tourguide</h1>");
  expect(html).toContain('name="username"');
  expect(html).toMatch(/\/pkg\/tourguide\.[0-9a-f]{16}\.js/);
});

test("the bundle arrives under hashed names, brotli-compressed and cacheable for good", async ({ page }) => {
  const bundle: { url: string; encoding?: string; cache?: string }[] = [];
  page.on("response", (response) => {
    if (new URL(response.url()).pathname.startsWith("/pkg/")) {
      const headers = response.headers();
      bundle.push({ url: response.url(), encoding: headers["content-encoding"], cache: headers["cache-control"] });
    }
  });
  await page.goto("/login");
  await waitForHydration(page);
  const kinds = bundle.map((file) => file.url.match(/tourguide\.[0-9a-f]{16}\.(js|wasm|css)$/)?.[1]).sort();
  expect(kinds).toEqual(["css", "js", "wasm"]);
  for (const file of bundle) {
    expect(file.encoding, file.url).toBe("br");
    expect(file.cache, file.url).toBe("public, max-age=31536000, immutable");
  }
});

test("sign in, start a conversation, send a message and see the demo reply", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await expect(page.locator(".topbar .badge")).toHaveText("Demo");

  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await waitForHydration(page);

  const box = page.getByLabel("Message");
  await box.fill("Hello, tour guide");
  await page.getByRole("button", { name: "Send" }).click();

  const messages = page.locator(".messages .message");
  await expect(messages.filter({ hasText: "Hello, tour guide" }).first()).toHaveClass(/user/);
  // The reply arrives through the worker and polling, without a reload.
  const reply = page.locator(".messages .message.assistant");
  await expect(reply).toContainText("You said: \u201cHello, tour guide\u201d");
  await expect(box).toHaveValue("");
  // The first message names the conversation in the list.
  await expect(page.locator(".conversation-list a[aria-current=page] .title")).toHaveText("Hello, tour guide");

  await page.screenshot({ path: "screenshots/chat-demo-reply.png", fullPage: true });
  expect(errors).toEqual([]);
});

test("after its first load the page fetches only the messages it does not have", async ({ page }) => {
  const errors = watchPageErrors(page);
  const loads: { known: number; from: number; count: number }[] = [];
  // Each body is read before the assertions: a load still arriving as the test ended failed it.
  const reading: Promise<void>[] = [];
  page.on("response", (response) => {
    if (!response.url().endsWith("/api/conversation_since")) return;
    const known = Number(new URLSearchParams(response.request().postData() ?? "").get("known"));
    reading.push(
      response
        .json()
        .then((part) => {
          loads.push({ known, from: part.from, count: part.view.messages.length });
        })
        // A load that arrives as the test ends cannot be read any more; it is not one of the
        // loads the assertions are about.
        .catch((error: Error) => {
          if (!/Test ended|Target closed|has been closed/.test(error.message)) throw error;
        }),
    );
  });
  await signIn(page);
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await waitForHydration(page);
  const messages = page.locator(".messages .message");
  for (const text of ["one", "two", "three"]) {
    await page.getByLabel("Message").fill(text);
    await page.getByRole("button", { name: "Send" }).click();
    await expect(page.locator(".messages .message.assistant").last()).toContainText(`You said: \u201c${text}\u201d`);
  }
  await expect(messages).toHaveCount(6);
  await Promise.all(reading);
  // Once the page has messages, every load brings only the ones after them: nothing the page
  // has changes as turns start and end (a line's "Edit" follows the status, not the line).
  const partial = loads.filter((load) => load.known > 0 && load.from === load.known);
  expect(partial.length, JSON.stringify(loads)).toBeGreaterThan(0);
  expect(
    loads.filter((load) => load.known > 0 && load.from !== load.known),
    JSON.stringify(loads),
  ).toEqual([]);
  for (const load of partial) expect(load.count, JSON.stringify(loads)).toBeLessThanOrEqual(2);
  expect(errors).toEqual([]);
});

test("a page carries its lines once, in its markup, and hydrates with them", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await newConversation(page, "first");
  const replies = page.locator(".messages .message.assistant");
  await expect(replies.last()).toContainText("You said: \u201cfirst\u201d");
  const own = "a line of my own";
  await send(page, own);
  await expect(replies.last()).toContainText(`You said: \u201c${own}\u201d`);
  // The hydration data leaves the reply's HTML and the reader's text out: each is in the page
  // once, not twice (the reader's line once as itself, once quoted in the reply).
  const html = await (await page.request.get(page.url())).text();
  expect(html.split("You said: \u201cfirst\u201d").length - 1).toBe(1);
  expect(html.split(own).length - 1).toBe(2);
  await page.reload();
  await waitForHydration(page);
  await expect(replies.first()).toContainText("You said: \u201cfirst\u201d");
  // The editor starts from the text the page read back from its markup.
  const line = page.locator(".messages .message.user").last();
  await line.locator(".edit-message").click();
  await expect(line.locator(".edit-form textarea")).toHaveValue(own);
  await line.getByRole("link", { name: "Cancel" }).click();
  await send(page, "second");
  await expect(replies).toHaveCount(3);
  await expect(replies.first()).toContainText("You said: \u201cfirst\u201d");
  await expect(page.locator(".messages .message.user").nth(1)).toHaveText(new RegExp(own));
  await expect(replies.last()).toContainText("You said: \u201csecond\u201d");
  expect(errors).toEqual([]);
});

test("without the event stream the reply still arrives by polling", async ({ page }) => {
  const errors = watchPageErrors(page);
  // A proxy that drops server-sent events: the panel falls back to polling.
  await page.route("**/events/**", (route) => route.abort());
  await signIn(page);
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await waitForHydration(page);

  await page.getByLabel("Message").fill("Are you there?");
  await page.getByRole("button", { name: "Send" }).click();
  await expect(page.locator(".messages .message.assistant")).toContainText("You said: \u201cAre you there?\u201d");
  expect(errors).toEqual([]);
});

test("a wrong password is refused with a message", async ({ page }) => {
  await page.goto("/login");
  await waitForHydration(page);
  await page.getByLabel("User name").fill("demo");
  await page.getByLabel("Password").fill("not the password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert")).toHaveText("The user name or password is wrong.");
  await expect(page).toHaveURL(/\/login$/);
});

test("a plain post's refusal shows on the page it goes back to, which hydrates with it", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await newConversation(page, "Hello there");
  await expect(page.locator(".messages .message.assistant")).toContainText("Hello there");
  const here = page.url();
  const id = new URL(here).pathname.split("/c/")[1];
  // What the browser sends for the composer before the WASM runs: a plain form post, here with an
  // empty message. The answer leads back to the page with the refusal in its address.
  const posted = await page.request.post("/api/send_message", {
    form: { conversation_id: id, content: "" },
    headers: { accept: "text/html", referer: here, origin: new URL(here).origin },
    maxRedirects: 0,
  });
  expect(posted.status()).toBe(302);
  const back = posted.headers()["location"];
  expect(back).toContain("__err=");
  await page.goto(back);
  await waitForHydration(page);
  await expect(page.locator(".chat-panel > .error")).toHaveText("The message is empty.");
  // Hydrated with the same refusal the server drew: the page works.
  await send(page, "Still here");
  await expect(page.locator(".messages .message.assistant").last()).toContainText("Still here");
  expect(errors).toEqual([]);
});

test.describe("in German", () => {
  test.use({ locale: "de-DE" });

  test("the browser's language is used until the user picks one", async ({ page }) => {
    const errors = watchPageErrors(page);
    await page.goto("/login");
    await waitForHydration(page);
    await expect(page.locator("html")).toHaveAttribute("lang", "de");
    await page.getByLabel("Benutzername").fill("demo");
    await page.getByLabel("Passwort").fill("e2e-demo-password");
    await page.getByRole("button", { name: "Anmelden" }).click();
    await expect(page.getByRole("button", { name: "Neue Unterhaltung" })).toBeVisible();

    // The user's own choice wins over the browser's language, and sticks.
    await pickLanguage(page, "EN");
    await expect(page.getByRole("button", { name: "New conversation" })).toBeVisible();
    await page.reload();
    await expect(page.locator("html")).toHaveAttribute("lang", "en");
    await pickLanguage(page, "DE");
    await expect(page.getByRole("button", { name: "Neue Unterhaltung" })).toBeVisible();
    // Leave the shared demo user as the other tests expect it.
    await pickLanguage(page, "EN");
    await expect(page.getByRole("button", { name: "New conversation" })).toBeVisible();
    expect(errors).toEqual([]);
  });
});

/** The list's server function (`list_conversations`). */
const isListLoad = (url: URL) => url.pathname === "/api/conversations";

test("the list marks the open conversation as the reader moves between them", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await newConversation(page, "First stop of the walk");
  const first = new URL(page.url()).pathname;
  await expect(page.locator(".messages .message.assistant")).toContainText("First stop of the walk");
  await newConversation(page, "Second stop of the walk");
  const second = new URL(page.url()).pathname;
  await expect(page.locator(".messages .message.assistant")).toContainText("Second stop of the walk");
  const marked = page.locator(".conversation-list a[aria-current=page]");
  await expect(marked).toHaveCount(1);
  await expect(marked).toHaveAttribute("href", second);

  // A click in the list opens the conversation's page (the list is not an island's router: the
  // server draws the page, the list with it): the mark follows, and only one entry carries it.
  await page.locator(`.conversation-list a[href="${first}"]`).click();
  await expect(page).toHaveURL(new RegExp(`${first}$`));
  await expect(page.locator(".messages .message.user").first()).toHaveText(/First stop of the walk/);
  await expect(marked).toHaveCount(1);
  await expect(marked).toHaveAttribute("href", first);
  await waitForHydration(page);

  // A third conversation waits on an approval card: its entry carries that status.
  await newConversation(page, "/note Third stop of the walk");
  await expect(page.locator(".approval-card")).toBeVisible();
  const third = new URL(page.url()).pathname;
  const entries = page.locator(".conversation-list li");
  const waiting = page.locator(`.conversation-list a[href="${third}"] .status`);
  await expect(waiting).toHaveText("waiting for approval");
  const drawn = await entries.allTextContents();

  // A page carries the list in its markup only, not again as data: an entry's id is in the page
  // once, in its link. The browser reads the entries back from the links as it hydrates, and does
  // not load the list again for that.
  const listLoads: string[] = [];
  page.on("request", (request) => {
    if (isListLoad(new URL(request.url()))) listLoads.push(request.url());
  });
  const html = await (await page.request.get(second)).text();
  expect(html.split(first.slice("/c/".length)).length - 1).toBe(1);
  await page.goto(second);
  await waitForHydration(page);
  await expect(marked).toHaveAttribute("href", second);
  await page.waitForTimeout(500);
  expect(listLoads).toEqual([]);
  // A move brings the list with the page it opens: drawn by the server with the same entries,
  // the new one marked, and not loaded again by the browser.
  await page.locator(`.conversation-list a[href="${first}"]`).click();
  await expect(page).toHaveURL(new RegExp(`${first}$`));
  await waitForHydration(page);
  await expect(marked).toHaveAttribute("href", first);
  expect(await entries.allTextContents()).toEqual(drawn);
  await expect(waiting).toHaveText("waiting for approval");
  await page.waitForTimeout(500);
  expect(listLoads).toEqual([]);
  expect(errors).toEqual([]);
});

test("a conversation is renamed and deleted from its menu", async ({ page }) => {
  const errors = watchPageErrors(page);
  await signIn(page);
  await page.getByRole("button", { name: "New conversation" }).click();
  await expect(page).toHaveURL(/\/c\/[0-9a-f-]{36}$/);
  await waitForHydration(page);
  const url = page.url();

  await page.getByText("Rename or delete").click();
  await page.getByLabel("Title", { exact: true }).fill("Flour orders");
  await page.getByRole("button", { name: "Rename" }).click();
  await expect(page.locator(".conversation-title")).toHaveText("Flour orders");
  await expect(page.locator(".conversation-list a[aria-current=page] .title")).toHaveText("Flour orders");

  const menu = page.locator("details.conversation-actions");
  if (!(await menu.evaluate((element) => (element as HTMLDetailsElement).open))) {
    await menu.locator("summary").click();
  }
  await page.getByRole("button", { name: "Delete conversation" }).click();
  await expect(page).toHaveURL(/\/$/);
  await expect(page.locator(".conversation-list .title").filter({ hasText: "Flour orders" })).toHaveCount(0);
  await page.goto(url);
  await expect(page.getByRole("alert")).toHaveText("Conversation not found.");
  expect(errors).toEqual([]);
});
