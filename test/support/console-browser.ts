// A real headless Chromium (Debian's `chromium`, driven by playwright-core) for the admin
// console's stories: one browser per test file, a fresh context (cookies) per story, and
// screenshots written to test-screenshots/ (git-ignored) for people to look at.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { PNG } from 'pngjs';
import jsQRModule from 'jsqr';
import type { TestPortal } from './test-portal.js';

/** jsqr is CommonJS whose types declare a default export: under Node's ESM that is `.default` of the module. */
const jsQR = jsQRModule.default;

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const SCREENSHOTS = path.resolve(import.meta.dirname, '../../test-screenshots');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** The console's address on the portal. */
export function consoleUrl(portal: TestPortal): string {
  return `${portal.portal.url}/vpn-user-portal/admin/`;
}

export interface ConsoleTab {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Script errors and CSP violations the page reported. */
  readonly problems: string[];
}

/** A fresh browser context (no cookies), on a phone-sized or desktop window, in a time zone (default the host's). */
export async function openTab(
  browser: Browser,
  options: { readonly phone?: boolean; readonly timezoneId?: string } = {},
): Promise<ConsoleTab> {
  const context = await browser.newContext({
    viewport: options.phone === true ? { width: 390, height: 844 } : { width: 1280, height: 900 },
    ...(options.timezoneId === undefined ? {} : { timezoneId: options.timezoneId }),
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  return { context, page, problems };
}

/** Signs in on the sign-in form as a person would: paste the key, press the button. */
export async function signIn(page: Page, portal: TestPortal, credential: string): Promise<void> {
  await page.goto(`${consoleUrl(portal)}sign-in`);
  await page.getByLabel('Admin key or Admin API secret').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState('load');
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Decodes the QR code in a PNG (a screenshot of the code's image). */
export function readQrCode(png: Buffer): string | null {
  const image = PNG.sync.read(png);
  return (
    jsQR(new Uint8ClampedArray(image.data.buffer, image.data.byteOffset, image.data.length), image.width, image.height)
      ?.data ?? null
  );
}
