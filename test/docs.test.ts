// /docs in a real headless Chromium (Debian's package, driven by playwright-core): every tag of the
// contract is on the page and an operation opens to show its example. Screenshots go to .tap/.
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { spec } from '../src/http/spec.js';
import { buildTestApp } from './helpers/app.js';
import { launchChromium, needsChromium } from './helpers/chromium.js';

const tags = ((spec as { tags?: { name: string }[] }).tags ?? []).map((tag) => tag.name);

t.test(
  '/docs renders every tag and an operation with its example',
  {
    skip: needsChromium,
  },
  async (t) => {
    const ctx = await buildTestApp(t);
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
    const browser = await launchChromium(t);
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on('pageerror', (err) => failures.push(err.message));
    page.on('requestfailed', (req) => failures.push(`${req.url()}: ${req.failure()?.errorText}`));

    const res = await page.goto(`${base}/docs`, { waitUntil: 'networkidle' });
    t.equal(res?.status(), 200);
    await page.waitForSelector('.opblock-tag', { timeout: 30_000 });
    const title = await page.textContent('.info .title');
    t.match(title, String((spec.info as { title: string }).title), 'the contract title is shown');

    // Past 150 tags and operations Swagger UI virtualises the list: only what is near the viewport is in
    // the DOM. Scroll a reader's way down the page and collect every tag and operation that appears.
    const shownTags = new Set<string>();
    const shownOps = new Set<string>();
    for (let lastY = -1; ; ) {
      const seen = await page.evaluate(() => ({
        tags: [...document.querySelectorAll('.opblock-tag')].map((e) => e.getAttribute('data-tag') ?? ''),
        ops: [...document.querySelectorAll('.opblock')].map((e) => e.id),
      }));
      for (const tag of seen.tags) shownTags.add(tag);
      for (const id of seen.ops) shownOps.add(id);
      const y = await page.evaluate(() => {
        window.scrollBy(0, window.innerHeight / 2);
        return window.scrollY;
      });
      if (y === lastY) break;
      lastY = y;
      await page.waitForTimeout(50);
    }
    await page.evaluate(() => window.scrollTo(0, 0));
    t.same([...shownTags].sort(), [...tags].sort(), `every tag is rendered (${tags.length})`);
    const operationIds = Object.values(spec.paths).flatMap((item) =>
      Object.values(item).flatMap((o) => (o?.operationId ? [o.operationId as string] : [])),
    );
    const missing = operationIds.filter((id) => ![...shownOps].some((domId) => domId.endsWith(`-${id}`)));
    t.same(missing, [], `every operation is listed (${operationIds.length})`);

    mkdirSync('.tap', { recursive: true });
    await page.screenshot({ path: '.tap/docs.png', fullPage: true });

    // One operation opened: its summary, request body example, and documented responses.
    const op = page.locator('#operations-organizations-organizations_create');
    await op.locator('.opblock-summary').click();
    await op.locator('.opblock-body').waitFor();
    const body = (await op.locator('.opblock-body').innerText()).replace(/\s+/g, ' ');
    t.match(body, /Request body/i, 'the request body section is shown');
    t.match(body, /"name": "string"|"name":/, 'with an example naming its fields');
    for (const status of ['201', '400', '401', '403'])
      t.match(body, new RegExp(`\\b${status}\\b`), `response ${status} is documented`);
    await op.screenshot({ path: '.tap/docs-organizations_create.png' });

    t.same(failures, [], 'no script errors or failed requests on the page');
  },
);

t.test(
  '"Try it out" calls the server the page came from, on any port',
  {
    skip: needsChromium,
  },
  async (t) => {
    const ctx = await buildTestApp(t);
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
    const browser = await launchChromium(t);
    const page = await browser.newPage();
    const calls: string[] = [];
    page.on('response', (res) => calls.push(`${res.request().method()} ${res.url()} ${res.status()}`));
    await page.goto(`${base}/docs`, { waitUntil: 'networkidle' });
    const op = page.locator('[id$="-health_retrieve"]').first();
    await op.waitFor({ timeout: 30_000 });
    await op.locator('.opblock-summary').click();
    await op.locator('button.try-out__btn').click();
    await op.locator('button.execute').click();
    const status = op.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 15_000 });
    t.equal((await status.innerText()).trim(), '200', 'the call succeeded, not "Failed to fetch"');
    t.ok(
      calls.some((c) => c === `GET ${base}/_health 200`),
      `the call went to this server (${calls.filter((c) => c.includes('_health')).join('; ')})`,
    );
  },
);
