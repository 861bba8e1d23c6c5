import { expect, test } from "@playwright/test";
import * as fs from "node:fs";
import * as path from "node:path";
import { newConversation, shoot, signIn, watchPageErrors } from "./helpers";

// The folder server-filesystem works on (scripts/e2e-servers makes it empty at start).
const FILES = path.resolve(__dirname, "../../target/e2e-mcp/files");

test.beforeEach(async ({ page }) => {
  await signIn(page);
});

/** Waits until the tools page shows the server connected with the tool. */
async function toolOffered(page: import("@playwright/test").Page, server: string, tool: string) {
  await expect(async () => {
    await page.goto("/tools");
    const listed = page.locator(`.mcp-server[data-server="${server}"]`);
    await expect(listed.locator(".status")).toHaveText("connected", { timeout: 1000 });
    await expect(listed.locator(`li[data-tool="${tool}"]`)).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 20_000 });
}

test("the tools page lists each MCP server with its state and its tools' effects", async ({ page }) => {
  await toolOffered(page, "everything", "everything.trigger-elicitation-request");
  const everything = page.locator('.mcp-server[data-server="everything"]');
  await expect(everything.locator('li[data-tool="everything.echo"] .effect')).toHaveText("reads");
  await expect(everything.locator('li[data-tool="everything.trigger-elicitation-request"] .badge')).toHaveText(
    "needs approval",
  );
  await expect(page.locator('section[aria-labelledby="built-in"] li[data-tool="ask_choice"]')).toBeVisible();
  await shoot(page, "tools-page");
});

test("an MCP server's question comes after its card, as a form with checkboxes, and the answer goes back", async ({
  page,
}) => {
  const errors = watchPageErrors(page);
  await toolOffered(page, "everything", "everything.trigger-elicitation-request");
  await page.goto("/");
  await newConversation(page, "/mcp everything.trigger-elicitation-request");

  const card = page.locator(".approval-card");
  await expect(card.locator(".tool")).toHaveText("everything.trigger-elicitation-request");
  await expect(card.locator(".origin")).toContainText("MCP server everything");
  await expect(card.getByRole("button")).toHaveText(["Apply", "Cancel"]);
  await shoot(page, "mcp-card");
  await card.getByRole("button", { name: "Apply" }).click();

  const group = page.getByRole("group", { name: "Reply options" });
  await expect(page.locator(".messages")).toContainText("Please provide inputs for the following fields:");
  await expect(page.locator(".question .asked-by")).toContainText("MCP server everything");
  const instruments = group.getByRole("group", { name: /Untitled Multiple Select Enum/ });
  // The schema's default comes ticked.
  await expect(instruments.getByLabel("Guitar")).toBeChecked();
  await expect(group.getByLabel(/^String with default/)).toHaveValue("It was a dark and stormy night.");
  const fish = group.getByRole("group", { name: /Titled Multiple Select Enum/ }).last();
  await expect(fish.getByLabel("Tuna")).toBeChecked();
  await shoot(page, "mcp-form");

  await group.getByLabel(/^String \(/).fill("Ada Lovelace");
  await instruments.getByLabel("Guitar").uncheck();
  await instruments.getByLabel("Piano").check();
  await instruments.getByLabel("Drums").check();
  await fish.getByLabel("Salmon").check();
  await group.getByRole("button", { name: "Send answer" }).click();

  await expect(page.locator(".messages .message.user").last()).toContainText("Ada Lovelace");
  const result = page.locator(".messages .message.assistant").last();
  await expect(result).toContainText("Ada Lovelace");
  await expect(result).toContainText("Piano");
  await expect(result).toContainText("fish-2");
  await expect(group).toHaveCount(0);
  expect(errors).toEqual([]);
});

test("declining an MCP server's question tells the server", async ({ page }) => {
  await toolOffered(page, "everything", "everything.trigger-elicitation-request");
  await page.goto("/");
  await newConversation(page, "/mcp everything.trigger-elicitation-request");
  await page.locator(".approval-card").getByRole("button", { name: "Apply" }).click();
  const group = page.getByRole("group", { name: "Reply options" });
  await expect(group).toBeVisible();
  await page.locator(".question").getByRole("button", { name: "Decline" }).click();
  await expect(page.locator(".messages .message.assistant").last()).toContainText(/decline/i);
  await expect(group).toHaveCount(0);
});

// A page an MCP server asks the reader to open (URL-mode elicitation). Routed here, so the test
// sees every request to its host: none before the reader's click.
const LINK = "https://pay.example/checkout?order=7";

test("an MCP server's link is a card with its host: opened only by the reader's click, in a new tab, and Done goes on", async ({
  page,
  context,
}) => {
  const errors = watchPageErrors(page);
  const fetched: { url: string; referer?: string }[] = [];
  await context.route("https://pay.example/**", async (route) => {
    fetched.push({ url: route.request().url(), referer: route.request().headers()["referer"] });
    await route.fulfill({ status: 200, contentType: "text/html", body: "<p>Paid.</p>" });
  });
  await toolOffered(page, "everything", "everything.trigger-url-elicitation");
  await page.goto("/");
  await newConversation(
    page,
    `/mcp everything.trigger-url-elicitation ${JSON.stringify({ url: LINK, message: "Pay for order 7" })}`,
  );
  await page.locator(".approval-card").getByRole("button", { name: "Apply" }).click();

  const group = page.getByRole("group", { name: "Reply options" });
  await expect(group.locator(".link-host")).toHaveText("everything asks you to open a page on pay.example");
  await expect(group.locator(".link-url")).toHaveText(LINK);
  const open = group.getByRole("link", { name: "Open" });
  await expect(open).toHaveAttribute("href", LINK);
  await expect(open).toHaveAttribute("target", "_blank");
  await expect(open).toHaveAttribute("rel", "noopener noreferrer");
  await expect(page.locator(".question").getByRole("button", { name: "Decline" })).toBeVisible();
  await shoot(page, "mcp-link");
  expect(fetched).toEqual([]);

  const [tab] = await Promise.all([context.waitForEvent("page"), open.click()]);
  await expect(tab.locator("p")).toHaveText("Paid.");
  expect(await tab.evaluate(() => window.opener)).toBeNull();
  expect(fetched).toEqual([{ url: LINK, referer: undefined }]);
  await tab.close();
  // The question waits until the reader says they are done.
  await expect(group).toBeVisible();

  await group.getByRole("button", { name: "Done" }).click();
  await expect(page.locator(".messages .message.assistant").last()).toContainText(
    "User completed the URL elicitation flow",
  );
  await expect(group).toHaveCount(0);
  expect(errors).toEqual([]);
});

test("a file write through MCP waits for the card: Cancel leaves the folder alone, Apply writes", async ({ page }) => {
  await toolOffered(page, "files", "files.write_file");
  const file = path.join(FILES, "from-the-chat.txt");
  const write = `/mcp files.write_file ${JSON.stringify({ path: file, content: "Hallo aus dem Chat" })}`;
  await page.goto("/");
  await newConversation(page, write);
  const card = page.locator(".approval-card");
  await expect(card.locator(".tool")).toHaveText("files.write_file");
  await expect(card.locator(".origin")).toContainText("MCP server files");
  await expect(card.locator(".arguments")).toContainText("Hallo aus dem Chat");
  expect(fs.existsSync(file)).toBe(false);
  // Other specs write into the folder too: what matters is that Cancel adds nothing.
  const before = fs.readdirSync(FILES);
  await card.getByRole("button", { name: "Cancel" }).click();
  await expect(card).toHaveCount(0);
  await expect(page.locator(".messages .message.assistant").last()).toContainText("approval_denied");
  expect(fs.readdirSync(FILES)).toEqual(before);

  await page.getByLabel("Message").fill(write);
  await page.getByRole("button", { name: "Send" }).click();
  await card.getByRole("button", { name: "Apply" }).click();
  await expect(card).toHaveCount(0);
  await expect(page.locator(".messages .message.assistant").last()).toContainText("Successfully wrote");
  expect(fs.readFileSync(file, "utf8")).toBe("Hallo aus dem Chat");
});
