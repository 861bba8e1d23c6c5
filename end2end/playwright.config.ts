import { defineConfig, devices } from "@playwright/test";

// The server under test gets its own port, database and demo password, so a developer's running
// instance (port 3000, ./data) is never touched.
const PORT = Number(process.env.E2E_PORT ?? 3210);
export const BASE_URL = `http://127.0.0.1:${PORT}`;

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
  webServer: {
    command: "rm -rf target/e2e && mkdir -p target/e2e && exec target/debug/server",
    cwd: "..",
    url: `${BASE_URL}/login`,
    reuseExistingServer: false,
    timeout: 60_000,
    stdout: "pipe",
    env: {
      TOURGUIDE_DATABASE: "target/e2e/tourguide.db",
      TOURGUIDE_ADDRESS: `127.0.0.1:${PORT}`,
      LEPTOS_SITE_ROOT: "target/site",
      TOURGUIDE_DEMO_PASSWORD: "e2e-demo-password",
      RUST_LOG: "warn",
    },
  },
  projects: [
    { name: "hydrated", use: chromium, testIgnore: /\.nojs\.spec\.ts/ },
    { name: "no-js", use: { ...chromium, javaScriptEnabled: false }, testMatch: /\.nojs\.spec\.ts/ },
  ],
});
