import { defineConfig, devices } from "@playwright/test";

// The server under test gets its own port, database and demo password, so a developer's running
// instance (port 3000, ./data) is never touched. With E2E_DATABASE (a postgres:// URL) the same
// tests run against two web processes (A serves the pages, B is there to post through) and a
// separate worker process, all on that database (scripts/e2e-servers).
const PORT = Number(process.env.E2E_PORT ?? 3210);
export const BASE_URL = `http://127.0.0.1:${PORT}`;
const SECOND_PORT = Number(process.env.E2E_SECOND_PORT ?? 3211);
const MULTI_PROCESS = !!process.env.E2E_DATABASE;
// A second server that talks to a local streaming model through the real OpenAI-compatible client
// (tests/streaming.spec.ts). It runs beside the one-process SQLite run only.
const STREAM_PORT = Number(process.env.E2E_STREAM_PORT ?? 3212);
export const STREAM_URL = `http://127.0.0.1:${STREAM_PORT}`;

const chromium = {
  ...devices["Desktop Chrome"],
  launchOptions: {
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  },
};

export default defineConfig({
  testDir: "./tests",
  timeout: 30_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  forbidOnly: !!process.env.CI,
  retries: 0,
  reporter: [["list"]],
  use: { baseURL: BASE_URL, trace: "off" },
  webServer: [
    {
      command: "scripts/e2e-servers",
      cwd: "..",
      url: `${BASE_URL}/login`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "pipe",
      env: {
        E2E_PORT: String(PORT),
        E2E_SECOND_PORT: String(SECOND_PORT),
        ...(MULTI_PROCESS ? { E2E_DATABASE: process.env.E2E_DATABASE! } : {}),
      },
    },
    ...(MULTI_PROCESS
      ? []
      : [
          {
            command: "scripts/e2e-stream-servers",
            cwd: "..",
            url: `${STREAM_URL}/login`,
            reuseExistingServer: false,
            timeout: 60_000,
            stdout: "pipe" as const,
            env: { E2E_STREAM_PORT: String(STREAM_PORT) },
          },
        ]),
  ],
  projects: [
    { name: "hydrated", use: chromium, testIgnore: /\.nojs\.spec\.ts/ },
    { name: "no-js", use: { ...chromium, javaScriptEnabled: false }, testMatch: /\.nojs\.spec\.ts/ },
  ],
});
