// A shared dashboard's page in a real headless Chromium (Debian's package, driven by playwright-core),
// over real HTTP: the chart is drawn (its canvas and a screenshot's pixels are not blank), the text tile's
// Markdown is rendered and its script and javascript: link stay inert, the viewer's date range redraws
// the chart when the share allows it and is refused when not, and a protected share opens with its
// password. Screenshots go to .tap/.
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { Page } from 'playwright-core';
import { buildTestApp } from './helpers/app.js';
import { launchChromium, needsChromium } from './helpers/chromium.js';
import { makeTenant } from './helpers/factories.js';
import { pageviews, sharedDashboard } from './helpers/sharing.js';

const XSS_TEXT = [
  '## Notes',
  '',
  'The **launch** week. [Details](javascript:window.__xss=1) and [docs](https://example.com/docs).',
  '',
  '<script>window.__xss = 2</script>',
  '<img src="data:image/png;base64,AAAA" onerror="window.__xss = 3">',
  '<a href="javascript:window.__xss=4" id="raw-link">raw</a>',
].join('\n');

/** What went wrong on a page: script errors, CSP violations (console errors) and failed requests. */
function watch(page: Page): string[] {
  const failures: string[] = [];
  page.on('pageerror', (err) => failures.push(err.message));
  page.on('requestfailed', (req) => failures.push(`${req.method()} ${req.url()}: ${req.failure()?.errorText}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') failures.push(`console: ${msg.text()}`);
  });
  return failures;
}

/** The share of non-white pixels and the number of distinct colours in a PNG, decoded by the browser. */
async function inkOf(page: Page, png: Buffer): Promise<{ ink: number; colours: number }> {
  return page.evaluate(async (base64) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const bitmap = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
    const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
    const context = canvas.getContext('2d')!;
    context.drawImage(bitmap, 0, 0);
    const { data } = context.getImageData(0, 0, bitmap.width, bitmap.height);
    let ink = 0;
    const colours = new Set<number>();
    for (let i = 0; i < data.length; i += 4) {
      if (data[i]! < 240 || data[i + 1]! < 240 || data[i + 2]! < 240) ink++;
      colours.add((data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!);
    }
    return { ink: ink / (data.length / 4), colours: colours.size };
  }, png.toString('base64'));
}

/** The data of the first dataset of the chart Chart.js drew in the first tile's canvas. */
const chartData = (page: Page) =>
  page.evaluate(() => {
    const chart = (window as any).Chart.getChart(document.querySelector('.tile canvas'));
    return chart?.data.datasets[0].data as number[] | undefined;
  });

t.test(
  'a shared dashboard page draws its chart and Markdown, and changes its date range',
  { skip: needsChromium },
  async (t) => {
    const ctx = await buildTestApp(t);
    const a = await makeTenant(ctx.db);
    await pageviews(ctx.db, a.project.id, [2, 1, 0]);
    const open = await sharedDashboard(ctx, a, {
      text: XSS_TEXT,
      settings: { allowDateRangeChange: true, legend: true },
    });
    const closed = await sharedDashboard(ctx, a, { name: 'Fixed range' });
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
    const browser = await launchChromium(t);
    const page = await browser.newPage();
    const failures = watch(page);
    const offOrigin: string[] = [];
    page.on('request', (req) => {
      if (!req.url().startsWith(base)) offOrigin.push(req.url());
    });

    const res = await page.goto(`${base}/shared/${open.token}`, { waitUntil: 'networkidle' });
    t.equal(res?.status(), 200);
    await page.waitForSelector('.tile canvas', { timeout: 20_000 });
    t.equal(await page.textContent('h1'), 'Traffic', "the dashboard's name");
    t.equal(await page.textContent('header .description'), 'Daily pageviews', 'and description');
    t.match(await page.textContent('#date-range'), /From 2024-05-01 until 2024-05-03 \(2024-05-01 – 2024-05-03\)/);
    t.same(await chartData(page), [2, 1, 0], 'the chart holds the computed counts');
    t.equal(
      await page.evaluate(
        () => (window as any).Chart.getChart(document.querySelector('.tile canvas')).options.plugins.legend.display,
      ),
      true,
      'the legend setting is honoured',
    );

    // The chart's canvas has ink, and so has a screenshot of its tile.
    const canvasInk = await page.evaluate(() => {
      const canvas = document.querySelector('.tile canvas') as HTMLCanvasElement;
      const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
      let painted = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) painted++;
      return { painted, width: canvas.width, height: canvas.height };
    });
    t.ok(
      canvasInk.width > 100 && canvasInk.height > 100,
      `the canvas has a size (${canvasInk.width}x${canvasInk.height})`,
    );
    t.ok(canvasInk.painted > 500, `the canvas is painted (${canvasInk.painted} pixels)`);
    mkdirSync('.tap', { recursive: true });
    await page.screenshot({ path: '.tap/shared-dashboard.png', fullPage: true });
    const tileShot = await page.locator('.tile.insight').screenshot();
    const { ink, colours } = await inkOf(await browser.newPage(), tileShot);
    t.ok(ink > 0.01, `the chart's screenshot is not blank (${(ink * 100).toFixed(1)}% ink)`);
    t.ok(colours > 10, `nor one flat colour (${colours} colours)`);

    // Markdown rendered, its scripts and javascript: links inert.
    t.equal(await page.textContent('.markdown h2'), 'Notes');
    t.equal(await page.textContent('.markdown strong'), 'launch');
    t.equal(await page.locator('.markdown script').count(), 0, 'no script element survives');
    t.equal(await page.locator('.markdown [onerror]').count(), 0, 'nor an inline handler');
    const hrefs = await page.locator('.markdown a').evaluateAll((links) => links.map((l) => l.getAttribute('href')));
    t.notOk(
      hrefs.some((h) => h && /^\s*javascript:/i.test(h)),
      `no javascript: link (${hrefs.join(', ')})`,
    );
    t.ok(hrefs.includes('https://example.com/docs'), 'an ordinary link is kept');
    for (const link of await page.locator('.markdown a').all())
      await link.click({ modifiers: ['Shift'] }).catch(() => {});
    await page.waitForTimeout(300);
    t.equal(await page.evaluate(() => (window as any).__xss), undefined, 'nothing of the text tile ran');

    // The viewer picks 2-3 May: the server recomputes, the chart redraws, the address keeps the range.
    await page.selectOption('#date-from', 'custom');
    await page.fill('#custom-from', '2024-05-02');
    await page.fill('#custom-to', '2024-05-03');
    await page.click('#range button[type=submit]');
    await page.waitForFunction(
      () => (window as any).Chart.getChart(document.querySelector('.tile canvas'))?.data.datasets[0].data.length === 2,
      null,
      { timeout: 20_000 },
    );
    t.same(await chartData(page), [1, 0], 'redrawn over the chosen range');
    t.match(await page.textContent('#date-range'), /From 2024-05-02 until 2024-05-03/);
    t.match(page.url(), /\?date_from=2024-05-02&date_to=2024-05-03$/);
    await page.reload({ waitUntil: 'networkidle' });
    t.same(await chartData(page), [1, 0], 'and the reloaded page keeps it');
    await page.screenshot({ path: '.tap/shared-dashboard-range.png', fullPage: true });

    // Not allowed: no picker, and a range in the address is refused.
    await page.goto(`${base}/shared/${closed.token}`, { waitUntil: 'networkidle' });
    await page.waitForSelector('.tile canvas');
    t.equal(await page.locator('#range').count(), 0, 'no date range picker');
    const before = failures.length;
    const refused = await page.goto(`${base}/shared/${closed.token}?date_from=-30d`);
    t.equal(refused?.status(), 403);
    t.match(await page.textContent('main'), /Changing the date range is not allowed for this share/);

    t.same(
      failures.splice(before).map((f) => f.replace(/\d{3} \(\w+\)/, 'status')),
      ['console: Failed to load resource: the server responded with a status of status'],
      'the refused page is the one failed answer',
    );
    // Chrome reports the payload's handler as blocked by the page's CSP while DOMPurify parses it in an
    // inert document (nothing runs: __xss stayed unset); anything else is a failure.
    const blocked = failures.filter((f) => f.startsWith('console: Executing inline event handler violates'));
    t.ok(blocked.length <= 3, `only the sanitizer's inert parse is reported (${blocked.length} times)`);
    t.same(
      failures.filter((f) => !blocked.includes(f)),
      [],
      'no script errors, CSP violations or failed requests',
    );
    t.same(offOrigin, [], 'nothing is loaded from another origin');
  },
);

t.test('a password-protected share opens in the page with its password', { skip: needsChromium }, async (t) => {
  const ctx = await buildTestApp(t);
  const a = await makeTenant(ctx.db);
  await pageviews(ctx.db, a.project.id, [2, 1, 0]);
  const s = await sharedDashboard(ctx, a, { display: 'ActionsPie' });
  const params = { project_id: a.project.id, dashboard_id: s.dashboardId };
  await ctx.call('dashboards_sharing_partial_update', { key: a.key, params, body: { password_required: true } });
  await ctx.call('dashboards_sharing_passwords_create', { key: a.key, params, body: { raw_password: 'open sesame' } });
  await ctx.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;
  const browser = await launchChromium(t);
  const page = await browser.newPage();
  const failures = watch(page);

  await page.goto(`${base}/shared/${s.token}`, { waitUntil: 'networkidle' });
  await page.waitForSelector('#unlock');
  t.equal(await page.locator('.tile').count(), 0, 'nothing is shown before the password');
  await page.fill('#password', 'not it at all');
  await page.click('#unlock button');
  await page.waitForSelector('.error');
  t.match(await page.textContent('.error'), /Incorrect password/);
  // The refused attempt is the one failed answer (a 401, which Chromium also reports as an aborted request).
  await page.waitForTimeout(500);
  t.ok(
    failures.splice(0).every((f) => /401|POST .*ERR_ABORTED/.test(f)),
    'the wrong password was answered 401',
  );
  await page.fill('#password', 'open sesame');
  await page.click('#unlock button');
  await page.waitForSelector('.tile canvas', { timeout: 20_000 });
  t.equal(
    await page.evaluate(() => (window as any).Chart.getChart(document.querySelector('.tile canvas')).config.type),
    'pie',
    "PostHog's ActionsPie display is drawn as a pie",
  );
  t.same(failures, [], 'no script errors, CSP violations or failed requests');
  await page.reload({ waitUntil: 'networkidle' });
  await page.waitForSelector('.tile canvas', { timeout: 20_000 });
  t.equal(await page.locator('#unlock').count(), 0, 'a reload stays unlocked (the share cookie)');
  // Chromium reports the answered unlock request as aborted when the page it belonged to goes away.
  t.same(
    failures.filter((f) => !/^POST \S+: net::ERR_ABORTED$/.test(f)),
    [],
    'nor after the reload',
  );
});
