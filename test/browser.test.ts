// posthog-js in a real headless Chromium (Debian's package, driven by playwright-core), with its
// default settings, loaded by PostHog's HTML snippet from this server's /static/array.js on a page
// of another origin: it fetches its remote config and flags across origins, starts autocapture, and
// the pageview and a click arrive in the events list.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp } from './helpers/app.js';
import { launchChromium, needsChromium } from './helpers/chromium.js';
import { makeTenant } from './helpers/factories.js';

// PostHog's snippet loader: one line of minified JavaScript as its onboarding hands it out, cut into parts.
const POSTHOG_SNIPPET = [
  '!function(t,e){var o,n,p,r;e.__SV||(window.posthog&&window.posthog.__loaded)||(window.posthog=e,',
  'e._i=[],e.init=function(i,s,a){function g(t,e){var o=e.split(".");2==o.length&&(t=t[o[0]],e=o[1]),',
  't[e]=function(){t.push([e].concat(Array.prototype.slice.call(arguments,',
  '0)))}}(p=t.createElement("script")).type="text/javascript",p.crossOrigin="anonymous",p.async=!0,',
  'p.src=s.api_host.replace(".i.posthog.com","-assets.i.posthog.com")+"/static/array.js",',
  '(r=t.getElementsByTagName("script")[0]).parentNode.insertBefore(p,r);var u=e;for(void ',
  '0!==a?u=e[a]=[]:a="posthog",u.people=u.people||[],u.toString=function(t){var e="posthog";',
  'return"posthog"!==a&&(e+="."+a),t||(e+=" (stub)"),e},u.people.toString=function(){return ',
  'u.toString(1)+".people (stub)"},o="init capture register register_once register_for_session ',
  'unregister unregister_for_session getFeatureFlag getFeatureFlagPayload isFeatureEnabled ',
  'reloadFeatureFlags updateEarlyAccessFeatureEnrollment getEarlyAccessFeatures on onFeatureFlags ',
  'onSessionId getSurveys getActiveMatchingSurveys renderSurvey canRenderSurvey identify ',
  'setPersonProperties group resetGroups setPersonPropertiesForFlags resetPersonPropertiesForFlags ',
  'setGroupPropertiesForFlags resetGroupPropertiesForFlags reset get_distinct_id getGroups ',
  'get_session_id get_session_replay_url alias set_config startSessionRecording stopSessionRecording ',
  'sessionRecordingStarted captureException loadToolbar get_property getSessionProperty ',
  'createPersonProfile opt_in_capturing opt_out_capturing has_opted_in_capturing ',
  'has_opted_out_capturing clear_opt_in_out_capturing debug".split(" "),n=0;n<o.length;n++)g(u,o[n]);',
  'e._i.push([i,s,a])},e.__SV=1)}(document,window.posthog||[]);',
].join('');

/** PostHog's HTML snippet, as its onboarding hands it out, with nothing but the host and token filled in. */
function snippet(apiHost: string, token: string): string {
  return `<script>
${POSTHOG_SNIPPET}
posthog.init(${JSON.stringify(token)}, { api_host: ${JSON.stringify(apiHost)} });
</script>`;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test(
  'posthog-js with default settings autocaptures into the events list',
  {
    skip: needsChromium,
  },
  async (t) => {
    const ctx = await buildTestApp(t);
    const a = await makeTenant(ctx.db);
    await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const api = `http://127.0.0.1:${(ctx.app.server.address() as AddressInfo).port}`;

    const html = `<!doctype html><html><head><title>Shop</title>${snippet(api, a.project.api_token)}</head>
    <body><h1>Shop</h1><button id="buy" class="cta">Buy now</button></body></html>`;
    const site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
    const origin = await listen(site);
    t.not(new URL(origin).port, new URL(api).port, 'the page is of another origin than the API');

    t.teardown(() => new Promise((resolve) => site.close(resolve)));
    const browser = await launchChromium(t, {
      // posthog-js drops the events of browsers it takes for bots, "HeadlessChrome" among them: the
      // page is visited as a person's Chrome would visit it.
      userAgent:
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36',
    });

    // An automated browser also says so in navigator.webdriver, which posthog-js checks as well.
    await browser.addInitScript(() => Object.defineProperty(Navigator.prototype, 'webdriver', { get: () => false }));
    const page = await browser.newPage();
    const failures: string[] = [];
    const apiCalls: string[] = [];
    page.on('pageerror', (err) => failures.push(err.message));
    page.on('requestfailed', (req) => failures.push(`${req.url()}: ${req.failure()?.errorText}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') failures.push(`console: ${msg.text()}`);
    });
    page.on('response', (res) => {
      if (res.url().startsWith(api))
        apiCalls.push(`${res.request().method()} ${new URL(res.url()).pathname} ${res.status()}`);
    });

    await page.goto(origin, { waitUntil: 'load' });
    await page.waitForFunction(
      () => (window as unknown as { posthog?: { __loaded?: boolean } }).posthog?.__loaded === true,
      null,
      {
        timeout: 20_000,
      },
    );
    await page.click('#buy');

    // posthog-js sends in batches every few seconds; wait for both events to be listed.
    let names: string[] = [];
    let click: { properties: Record<string, unknown>; elements_chain?: string } | undefined;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      const res = await ctx.call('events_list', { key: a.key, params: { project_id: a.project.id } });
      names = res.body.results.map((e: { event: string }) => e.event);
      click = res.body.results.find((e: { event: string }) => e.event === '$autocapture');
      if (names.includes('$pageview') && click) break;
      await page.waitForTimeout(500);
    }
    t.ok(names.includes('$pageview'), `the pageview arrived (${names.join(', ')})`);
    t.ok(click, 'the click arrived as $autocapture');
    t.equal(click?.properties.$event_type, 'click');
    t.match(click?.elements_chain, /button.*cta|button/, 'with the clicked element');
    t.equal(click?.properties.$current_url, `${origin}/`);

    for (const path of ['/static/array.js', `/array/${a.project.api_token}/config.js`, '/static/1.449.2/surveys.js']) {
      t.ok(
        apiCalls.some((c) => c.startsWith(`GET ${path} 200`)),
        `${path} was loaded (${apiCalls.join('; ')})`,
      );
    }
    t.ok(
      apiCalls.some((c) => /^POST \/(e|i\/v0\/e)\/ 200$/.test(c)),
      'events were sent across origins',
    );

    // The remote config says there are no flags, so posthog-js skips /flags on load; asked for them,
    // it calls /flags across origins and reads the (empty) answer.
    const flags = await page.evaluate(
      () =>
        new Promise<string[]>((resolve, reject) => {
          const ph = (
            window as unknown as {
              posthog: { onFeatureFlags(cb: (f: string[]) => void): void; reloadFeatureFlags(): void };
            }
          ).posthog;
          setTimeout(() => reject(new Error('no flags answer within 10 s')), 10_000);
          ph.onFeatureFlags((f) => resolve(f));
          ph.reloadFeatureFlags();
        }),
    );
    t.same(flags, [], 'posthog-js read an empty set of flags');
    t.ok(
      apiCalls.some((c) => /^POST \/flags\/ 200$/.test(c)),
      `/flags was answered (${apiCalls.join('; ')})`,
    );
    // Asked for surveys, posthog-js calls /api/surveys/ across origins and reads PostHog's answer
    // for a project without any.
    const surveys = await page.evaluate(
      () =>
        new Promise<unknown[]>((resolve, reject) => {
          const ph = (
            window as unknown as { posthog: { getSurveys(cb: (s: unknown[]) => void, forceReload: boolean): void } }
          ).posthog;
          setTimeout(() => reject(new Error('no surveys answer within 10 s')), 10_000);
          ph.getSurveys((s) => resolve(s), true);
        }),
    );
    t.same(surveys, [], 'posthog-js read an empty set of surveys');
    t.ok(
      apiCalls.some((c) => /^GET \/api\/surveys\/ 200$/.test(c)),
      `/api/surveys/ was answered (${apiCalls.join('; ')})`,
    );
    t.same(failures, [], 'no script errors, console errors or failed requests');
  },
);
