// Debian's Chromium, driven by playwright-core, for the tests that look at pages as a person would.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import type { Test } from 'tap';

export const CHROMIUM = '/usr/bin/chromium';

/** The test option that skips, saying why, where the package is missing. */
export const needsChromium = existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install chromium)`;

/**
 * A headless browser with a fresh profile, closed at teardown. The flags keep it from reaching out
 * to any network on its own (this suite's traffic stays on 127.0.0.1).
 */
export async function launchChromium(t: Test, options: { userAgent?: string } = {}): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'));
  // A persistent context is how playwright passes a fresh --user-data-dir.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    ...options,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  // The tests run through tsx, whose esbuild wraps named functions in a `__name(fn, "name")` helper;
  // a function handed to the page (page.evaluate, addInitScript) is sent as its source, helper calls
  // included, so the page gets the helper too.
  await browser.addInitScript('globalThis.__name = (fn) => fn');
  t.teardown(async () => {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  });
  return browser;
}
