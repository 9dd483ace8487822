// The public side of sharing through the real app: `/shared/<token>` for scripts (JSON) and for people
// (HTML, its headers), `/shared/<token>.json` in PostHog's exporter shape, the viewer's date range, the
// page's files, and tenant walls. Counts are worked out by hand from the pageviews each test inserts.
import { eq } from 'drizzle-orm';
import t from 'tap';
import { dashboards } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeKey, makeMember, makeTenant } from '../helpers/factories.js';
import { BROWSER_ACCEPT, pageviews, sharedDashboard, viewsQuery } from '../helpers/sharing.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;

const a = await makeTenant(db);
const b = await makeTenant(db);
// a: 2, 1, 0 pageviews on 1-3 May; b: 5, 0, 3.
await pageviews(db, a.project.id, [2, 1, 0]);
await pageviews(db, b.project.id, [5, 0, 3]);

type Tile = { insight: { id: number; result: { data: number[] }[] | null } | null; text: { body: string } | null };
const insightData = (dashboard: { tiles: unknown[] }) =>
  (dashboard.tiles as Tile[]).find((x) => x.insight)?.insight?.result?.[0]?.data;

const asJson = (token: string, query: Record<string, string> = {}, accept?: string) =>
  call('shared_dashboard_retrieve', {
    params: { access_token: token },
    query,
    headers: accept ? { accept } : {},
  });
const asPage = (token: string, query: Record<string, string> = {}) =>
  call('shared_dashboard_retrieve', { params: { access_token: token }, query, headers: { accept: BROWSER_ACCEPT } });
const exported = (token: string, query: Record<string, string> = {}) =>
  call('shared_json_retrieve', { params: { access_token: token }, query });

/** The JSON a page carries for its script, parsed back. */
function pageData(html: string): Record<string, any> {
  const m = /<script type="application\/json" id="shared-data">([^<]*)<\/script>/.exec(html);
  if (!m) throw new Error('the page carries no data');
  return JSON.parse(m[1]!);
}

t.test('a shared dashboard as JSON, for scripts', async (t) => {
  const s = await sharedDashboard(ctx, a, { settings: { legend: true, noHeader: true } });
  for (const accept of [undefined, 'application/json', '*/*', 'application/json, text/html']) {
    const res = await asJson(s.token, {}, accept);
    t.equal(res.status, 200, `Accept: ${accept ?? '(none)'}`);
    t.match(res.headers['content-type'], /^application\/json/);
    t.equal(res.body.id, s.dashboardId);
  }
  const res = await asJson(s.token);
  t.match(res.body, { name: 'Traffic', effective_privilege_level: 21, is_shared: true });
  t.same(insightData(res.body), [2, 1, 0], 'the insight is computed for the reader');
  t.equal(res.headers['cache-control'], 'no-store');
  t.match(res.headers.vary, /Accept/);
  t.equal(res.headers['content-security-policy'], undefined, 'no page, no page policy');
  t.equal(res.headers['x-frame-options'], 'DENY');

  const ex = await exported(s.token);
  t.equal(ex.status, 200);
  t.match(ex.body, {
    type: 'scene',
    accessToken: s.token,
    legend: true,
    noHeader: true,
    dashboard: { id: s.dashboardId },
  });
  t.notOk('whitelabel' in ex.body, 'settings that are off are left out, as PostHog does');
  t.notOk('insight' in ex.body);
  t.same(insightData(ex.body.dashboard), [2, 1, 0]);
  t.same(
    (ex.body.dashboard.tiles as unknown as Tile[]).map((x) => x.text?.body).filter(Boolean),
    ['## Notes\n\nThe **launch** week.'],
    'text tiles as written (the page renders them)',
  );
});

t.test('a shared dashboard as a page, for people', async (t) => {
  const name = 'Q2 </script><script>alert(1)</script> & more';
  const s = await sharedDashboard(ctx, a, { name, settings: { whitelabel: true } });
  const res = await asPage(s.token);
  t.equal(res.status, 200);
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8/);
  const csp = String(res.headers['content-security-policy']);
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'(;|$)/);
  t.match(csp, /style-src 'self'(;|$)/);
  t.notMatch(csp, /unsafe-inline|unsafe-eval|https?:/, 'nothing inline, nothing from elsewhere');
  t.match(csp, /frame-ancestors \*/, 'embeddable, as PostHog shares are');
  t.equal(res.headers['x-frame-options'], undefined);
  t.equal(res.headers['cache-control'], 'no-store');

  const html = res.raw;
  t.notOk(html.includes('<script>alert'), 'the name cannot close the data element');
  t.match(html, /<title>Q2 &lt;\/script&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; more<\/title>/);
  const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]!);
  t.ok(
    scripts.every(
      (attrs) => /src="\/shared\/assets\/[\w.]+\?v=[\w-]+"/.test(attrs) || /type="application\/json"/.test(attrs),
    ),
    `every script is a file of this origin or inert data (${scripts.join(' | ')})`,
  );
  const data = pageData(html);
  t.match(data, { type: 'scene', accessToken: s.token, whitelabel: true, dashboard: { name } });
  t.same(insightData(data.dashboard), [2, 1, 0]);

  for (const m of html.matchAll(/(?:src|href)="(\/shared\/assets\/[^"?]+)\?v=[\w-]+"/g)) {
    const file = await ctx.inject({ method: 'GET', url: m[1]! });
    t.equal(file.statusCode, 200, `${m[1]} is served`);
  }
});

t.test("the viewer's date range", async (t) => {
  const closed = await sharedDashboard(ctx, a);
  const refused = await exported(closed.token, { date_from: '2024-05-02' });
  t.equal(refused.status, 403, 'not unless the owner allowed it');
  t.equal(refused.body.detail, 'Changing the date range is not allowed for this share.');
  t.equal((await asJson(closed.token, { date_to: '2024-05-02' })).status, 403);
  const refusedPage = await asPage(closed.token, { date_from: '-30d' });
  t.equal(refusedPage.status, 403);
  t.match(refusedPage.headers['content-type'], /^text\/html/);
  t.match(refusedPage.raw, /not allowed/);

  const open = await sharedDashboard(ctx, a, { settings: { allowDateRangeChange: true } });
  t.same(insightData((await exported(open.token)).body.dashboard), [2, 1, 0], 'the stored range by default');
  const narrowed = await exported(open.token, { date_from: '2024-05-02', date_to: '2024-05-03' });
  t.equal(narrowed.status, 200);
  t.same(insightData(narrowed.body.dashboard), [1, 0], 'recomputed over 2-3 May');
  t.same(narrowed.body.dateRange, { date_from: '2024-05-02', date_to: '2024-05-03' });
  t.equal(narrowed.body.allowDateRangeChange, true);
  t.same(insightData((await asJson(open.token, { date_from: '2024-05-01', date_to: '2024-05-01' })).body), [2]);

  // Only the date range: an override of anything else in the query string changes nothing.
  const other = await exported(open.token, {
    date_from: '2024-05-01',
    date_to: '2024-05-03',
    filters_override: JSON.stringify({ properties: [{ key: '$browser', value: 'Safari', type: 'event' }] }),
    refresh: 'force_blocking',
  });
  t.same(insightData(other.body.dashboard), [2, 1, 0]);

  const bad = await exported(open.token, { date_from: "2024-05-01'; drop table events; --" });
  t.equal(bad.status, 400);
  t.match(bad.body, { type: 'validation_error', attr: 'date_from' });
  t.match((await exported(open.token, { date_to: 'all' })).body, { attr: 'date_to' });
  t.equal((await exported(open.token, { date_from: '-30d' })).status, 200, 'relative dates');
});

t.test('a disabled share, a rotated token and a deleted dashboard are 404 on every form', async (t) => {
  const s = await sharedDashboard(ctx, a);
  const params = { project_id: a.project.id, dashboard_id: s.dashboardId };
  const gone = async (token: string, why: string) => {
    t.equal((await asJson(token)).status, 404, `${why}: JSON`);
    t.equal((await exported(token)).status, 404, `${why}: .json`);
    const page = await asPage(token);
    t.equal(page.status, 404, `${why}: page`);
    t.match(page.headers['content-type'], /^text\/html/);
    t.notMatch(page.raw, /Traffic/, 'nothing of the dashboard');
  };
  await call('dashboards_sharing_partial_update', { key: a.key, params, body: { enabled: false } });
  await gone(s.token, 'disabled');
  await call('dashboards_sharing_partial_update', { key: a.key, params, body: { enabled: true } });
  t.equal((await exported(s.token)).status, 200, 'enabled again');
  const rotated = (await call('dashboards_sharing_refresh_create', { key: a.key, params })).body.access_token;
  await gone(s.token, 'rotated');
  t.equal((await exported(rotated)).status, 200);
  await db.update(dashboards).set({ deleted: true }).where(eq(dashboards.id, s.dashboardId));
  await gone(rotated, 'deleted');
  await gone('no-such-token', 'unknown');
  t.equal((await exported(`${rotated}.png`)).status, 404);
});

t.test("tenant walls: a token shows its own dashboard's data only", async (t) => {
  const mine = await sharedDashboard(ctx, a, { name: 'Mine' });
  const theirs = await sharedDashboard(ctx, b, { name: 'Theirs' });
  const mineRes = (await exported(mine.token)).body;
  const theirsRes = (await exported(theirs.token)).body;
  t.equal(mineRes.dashboard.id, mine.dashboardId);
  t.same(insightData(mineRes.dashboard), [2, 1, 0]);
  t.equal(theirsRes.dashboard.id, theirs.dashboardId);
  t.same(insightData(theirsRes.dashboard), [5, 0, 3], 'the same query, their own events');
  t.notOk(JSON.stringify(theirsRes).includes('Mine'));
  const onMine = { project_id: a.project.id, dashboard_id: theirs.dashboardId };
  t.equal((await call('dashboards_sharing_list', { key: a.key, params: onMine })).status, 404);
  t.equal(
    (await call('dashboards_sharing_partial_update', { key: a.key, params: onMine, body: { enabled: false } })).status,
    404,
    "another tenant's dashboard on my path",
  );
  t.equal((await exported(theirs.token)).status, 200, 'still shared');
});

t.test('hideExtraDetails leaves out who made and changed things', async (t) => {
  const s = await sharedDashboard(ctx, a, { settings: { hideExtraDetails: true } });
  const body = (await exported(s.token)).body;
  t.equal(body.hideExtraDetails, true);
  t.equal(body.dashboard.created_by, null);
  for (const tile of body.dashboard.tiles as Record<string, any>[]) {
    const item = tile.insight ?? tile.text;
    t.equal(item.created_by, null);
    t.equal(item.last_modified_by, null);
  }
  t.notOk(JSON.stringify(body).includes(a.user.email), "the owner's e-mail appears nowhere");
  const shown = (await exported((await sharedDashboard(ctx, a)).token)).body;
  t.equal(shown.dashboard.created_by.email, a.user.email, 'shown otherwise, as PostHog does');
});

t.test("the page's files", async (t) => {
  const res = await call('shared_assets_retrieve', { params: { file: 'chart.umd.min.js' } });
  t.equal(res.status, 200);
  t.match(res.headers['content-type'], /^application\/javascript/);
  t.match(res.raw, /Chart\.js v4\.6\.1/, 'the pinned Chart.js');
  const etag = String(res.headers.etag);
  t.match(etag, /^"[\w-]+"$/);
  const again = await call('shared_assets_retrieve', {
    params: { file: 'chart.umd.min.js' },
    headers: { 'if-none-match': etag },
  });
  t.equal(again.status, 304);
  t.match(
    (await call('shared_assets_retrieve', { params: { file: 'shared.css' } })).headers['content-type'],
    /^text\/css/,
  );
  for (const file of ['package.json', '..%2F..%2Fpackage.json', 'chart.js', 'constructor']) {
    t.equal((await ctx.inject({ method: 'GET', url: `/shared/assets/${file}` })).statusCode, 404, file);
  }
});

t.test('shared insights: /insights/{id}/sharing/ as PostHog, and /shared/<token> for the insight', async (t) => {
  const params = { project_id: a.project.id };
  const insight = (
    await call('insights_create', {
      key: a.key,
      params,
      body: { name: 'Bars', query: viewsQuery('ActionsBar') as never },
    })
  ).body;
  const p = { ...params, insight_id: insight.id };
  const unsaved = await call('insights_sharing_list', { key: a.key, params: p });
  t.match(unsaved.body, { created_at: null, enabled: false, password_required: false, share_passwords: [] });
  const saved = await call('insights_sharing_partial_update', {
    key: a.key,
    params: p,
    body: { enabled: true, settings: { legend: true, allowDateRangeChange: true } },
  });
  t.equal(saved.status, 200);
  t.same(saved.body.settings, { legend: true, allowDateRangeChange: true });
  const token = saved.body.access_token;

  const plain = await asJson(token);
  t.match(plain.body, { id: insight.id, name: 'Bars', effective_privilege_level: 21 });
  t.same((plain.body as any).result[0].data, [2, 1, 0]);
  const ex = (await exported(token, { date_from: '2024-05-03', date_to: '2024-05-03' })).body;
  t.match(ex, { type: 'scene', accessToken: token, legend: true, insight: { id: insight.id } });
  t.notOk('dashboard' in ex);
  t.same((ex.insight.result as any)[0].data, [0], "over the viewer's range");
  t.match(pageData((await asPage(token)).raw), { insight: { name: 'Bars' } });

  const rotated = (await call('insights_sharing_refresh_create', { key: a.key, params: p })).body.access_token;
  t.not(rotated, token);
  t.equal((await exported(token)).status, 404, 'the old token is dead');
  t.equal((await exported(rotated)).status, 200);
  await call('insights_partial_update', { key: a.key, params: { ...params, id: insight.id }, body: { deleted: true } });
  t.equal((await exported(rotated)).status, 404, 'a deleted insight is not shown');
  t.equal((await asPage(rotated)).status, 404);

  t.test('rights and walls', async (t) => {
    const other = (
      await call('insights_create', { key: b.key, params: { project_id: b.project.id }, body: { name: 'B' } })
    ).body;
    const onMine = { project_id: a.project.id, insight_id: other.id };
    t.match((await call('insights_sharing_list', { key: a.key, params: onMine })).body, {
      code: 'not_found',
      detail: 'Insight not found.',
    });
    t.equal(
      (await call('insights_sharing_partial_update', { key: a.key, params: onMine, body: { enabled: true } })).status,
      404,
      "another project's insight on my path",
    );
    t.equal((await call('insights_sharing_list', { key: b.key, params: p })).status, 403, 'not my organization');
    // Their insight's share with a password: my path cannot add to it nor remove it.
    const theirs = { project_id: b.project.id, insight_id: other.id };
    await call('insights_sharing_partial_update', { key: b.key, params: theirs, body: { password_required: true } });
    const theirPassword = (
      await call('insights_sharing_passwords_create', {
        key: b.key,
        params: theirs,
        body: { raw_password: 'theirs!!' },
      })
    ).body;
    t.equal((await call('insights_sharing_passwords_create', { key: a.key, params: onMine, body: {} })).status, 404);
    const removing = { ...onMine, password_id: theirPassword.id };
    t.equal((await call('insights_sharing_passwords_destroy', { key: a.key, params: removing })).status, 404);
    const own = { ...p, password_id: theirPassword.id };
    t.equal(
      (await call('insights_sharing_passwords_destroy', { key: a.key, params: own })).status,
      404,
      "another share's password on my insight",
    );
    t.equal((await call('insights_sharing_list', { key: b.key, params: theirs })).body.share_passwords.length, 1);
    const mine = (await call('insights_create', { key: a.key, params, body: { name: 'Mine' } })).body;
    const mp = { ...params, insight_id: mine.id };
    const reader = await makeKey(db, a.user, ['sharing_configuration:read']);
    t.equal((await call('insights_sharing_list', { key: reader, params: mp })).status, 200);
    t.equal(
      (await call('insights_sharing_partial_update', { key: reader, params: mp, body: { enabled: true } })).status,
      403,
    );
    t.equal((await call('insights_sharing_list', { params: mp })).status, 401);
    // On a dashboard restricted to collaborators, only those who may edit it may share the insight.
    const locked = (
      await call('dashboards_create', { key: a.key, params, body: { name: 'Locked', restriction_level: 37 } })
    ).body;
    await call('insights_partial_update', {
      key: a.key,
      params: { ...params, id: mine.id },
      body: { dashboards: [locked.id] },
    });
    const member = await makeMember(db, a, 1);
    t.match(
      (await call('insights_sharing_partial_update', { key: member.key, params: mp, body: { enabled: true } })).body,
      {
        code: 'permission_denied',
        detail: "You don't have edit permissions for this insight.",
      },
    );
    t.match(
      (await call('insights_sharing_list', { key: a.key, params: mp })).body,
      { enabled: false },
      'nothing changed',
    );
  });
});

t.test('a password-protected insight share: the page asks, the unlock opens it', async (t) => {
  const params = { project_id: a.project.id };
  const insight = (
    await call('insights_create', { key: a.key, params, body: { name: 'Secret views', query: viewsQuery() as never } })
  ).body;
  const p = { ...params, insight_id: insight.id };
  const token = (
    await call('insights_sharing_partial_update', {
      key: a.key,
      params: p,
      body: { enabled: true, password_required: true },
    })
  ).body.access_token;
  const password = await call('insights_sharing_passwords_create', {
    key: a.key,
    params: p,
    body: { raw_password: 'open sesame' },
  });
  t.equal(password.status, 201);

  t.equal((await asJson(token)).status, 401);
  t.equal((await exported(token)).status, 401);
  const locked = await asPage(token);
  t.equal(locked.status, 200, 'the page asks for the password');
  t.same(pageData(locked.raw), { type: 'unlock', accessToken: token, whitelabel: false });
  t.notOk(locked.raw.includes('Secret views'), 'and shows nothing else');

  t.equal(
    (await call('shared_json_create', { params: { access_token: token }, body: { password: 'wrong one' } })).status,
    401,
  );
  const opened = await call('shared_dashboard_create', {
    params: { access_token: token },
    body: { password: 'open sesame' },
  });
  t.equal(opened.status, 200);
  const shareToken = opened.body.shareToken;
  const cookie = String(opened.headers['set-cookie']);
  t.match(
    cookie,
    new RegExp(`^posthog_sharing_token=[^;]+; Path=/shared/${token}; Max-Age=86400; HttpOnly; SameSite=Lax$`),
  );
  const withCookie = await call('shared_dashboard_retrieve', {
    params: { access_token: token },
    headers: { accept: BROWSER_ACCEPT, cookie: cookie.split(';')[0]! },
  });
  const data = pageData(withCookie.raw);
  t.match(data, { type: 'scene', insight: { name: 'Secret views' }, shareToken }, 'the cookie opens the page');
  const bearer = await call('shared_json_retrieve', {
    params: { access_token: token },
    headers: { authorization: `Bearer ${shareToken}` },
  });
  t.same((bearer.body.insight.result as any)[0].data, [2, 1, 0]);

  await call('insights_sharing_passwords_destroy', { key: a.key, params: { ...p, password_id: password.body.id } });
  const after = await call('shared_dashboard_retrieve', {
    params: { access_token: token },
    headers: { accept: BROWSER_ACCEPT, cookie: cookie.split(';')[0]! },
  });
  t.equal(pageData(after.raw).type, 'unlock', 'removing the password locks the page again');
});
