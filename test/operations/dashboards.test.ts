import { eq } from 'drizzle-orm';
import t from 'tap';
import { dashboards } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { FULL_FIELDS, LIST_FIELDS, denied, dashboardCalls, notFound } from '../helpers/dashboards.js';
import { makeKey, makeMember, makeProject, makeTenant, type Tenant } from '../helpers/factories.js';

// Listing and reading dashboards.
const ctx = await buildTestApp(t);
const { call, db } = ctx;
const { dashboard, patch } = dashboardCalls(ctx);

t.test('dashboards_list', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  await dashboard(a, { name: 'beta', tags: ['Sales'] });
  await dashboard(a, { name: 'alpha', tags: ['marketing', 'web'] });
  await dashboard(a, { name: 'zeta', pinned: true });
  const gone = await dashboard(a, { name: 'aaa deleted' });
  await patch(a, gone.id, { deleted: true });
  await dashboard(a, { name: 'other project' }, a.key, (await makeProject(db, a)).id);
  await dashboard(b, { name: 'other organization' });

  const res = await call('dashboards_list', { key: a.key, params });
  t.equal(res.status, 200);
  t.equal(res.body.count, 3, 'deleted dashboards and other projects are left out');
  t.same(
    res.body.results.map((d: any) => d.name),
    ['zeta', 'alpha', 'beta'],
    'pinned first, then by name',
  );
  t.same(Object.keys(res.body.results[0]).sort(), LIST_FIELDS, 'list items carry exactly the listed fields');
  t.match(res.body.results[1], {
    tags: ['marketing', 'web'],
    created_by: { id: a.user.id, email: a.user.email },
    restriction_level: 21,
    effective_restriction_level: 21,
    effective_privilege_level: 37,
    is_shared: false,
    creation_mode: 'default',
  });

  t.test('tags filter keeps dashboards with any of the tags', async (t) => {
    const one = await call('dashboards_list', { key: a.key, params, query: { tags: ' Marketing ' } });
    t.same(
      one.body.results.map((d: any) => d.name),
      ['alpha'],
    );
    const two = await call('dashboards_list', { key: a.key, params, query: { tags: ['sales', 'web'] } });
    t.same(
      two.body.results.map((d: any) => d.name),
      ['alpha', 'beta'],
    );
    const none = await call('dashboards_list', { key: a.key, params, query: { tags: 'nothing' } });
    t.equal(none.body.count, 0);
  });

  t.test('pagination', async (t) => {
    const page = await call('dashboards_list', { key: a.key, params, query: { limit: 1, offset: 1 } });
    t.equal(page.body.results[0].name, 'alpha');
    t.equal(page.body.next, `http://localhost/api/projects/${a.project.id}/dashboards/?limit=1&offset=2`);
    t.equal(page.body.previous, `http://localhost/api/projects/${a.project.id}/dashboards/?limit=1`);
    const past = await call('dashboards_list', { key: a.key, params, query: { limit: 1, offset: 99 } });
    t.same([past.body.count, past.body.results], [page.body.count, []], 'a page past the end still counts them all');
    const tagged = await call('dashboards_list', { key: a.key, params, query: { tags: 'web', offset: 99 } });
    const all = await call('dashboards_list', { key: a.key, params, query: { tags: 'web' } });
    t.same([tagged.body.count, tagged.body.results], [all.body.count, []], 'filtered too');
    const bad = await call('dashboards_list', { key: a.key, params, query: { limit: 'many' as never } });
    t.match(bad, { status: 400, body: { type: 'validation_error', attr: 'limit' } });
  });

  t.test('auth', async (t) => {
    t.equal((await call('dashboards_list', { params })).status, 401);
    const noScope = await call('dashboards_list', { key: await makeKey(db, a.user, ['organization:read']), params });
    t.same(noScope.body, denied('dashboard:read'));
    t.equal(
      (await call('dashboards_list', { key: await makeKey(db, a.user, ['dashboard:write']), params })).status,
      200,
    );
    const foreign = await call('dashboards_list', { key: b.key, params });
    t.equal(foreign.status, 403);
    t.equal(foreign.body.detail, "You don't have access to the project.");
    const current = await call('dashboards_list', { key: a.key, params: { project_id: '@current' } });
    t.equal(current.body.count, 3);
  });

  t.test('levels are computed for the caller', async (t) => {
    const member = await makeMember(db, a, 1);
    await dashboard(a, { name: 'locked', restriction_level: 37 });
    const res = await call('dashboards_list', { key: member.key, params, query: { limit: 10 } });
    const locked = res.body.results.find((d: any) => d.name === 'locked');
    t.match(locked, { restriction_level: 37, effective_restriction_level: 37, effective_privilege_level: 21 });
    const mine = await call('dashboards_list', { key: a.key, params, query: { limit: 10 } });
    t.equal(mine.body.results.find((d) => d.name === 'locked')!.effective_privilege_level, 37, 'the creator edits');
  });
});

t.test('dashboards_retrieve', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const d = await dashboard(a, { name: 'Mine', restriction_level: 37 });
  const res = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: d.id } });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), FULL_FIELDS);
  t.same({ ...res.body, last_accessed_at: null }, d, 'the same as the create answer, but for the access time');
  t.equal(d.last_accessed_at, null, 'never retrieved yet');
  t.ok(Date.now() - Date.parse(res.body.last_accessed_at) < 60_000, 'a retrieve sets last_accessed_at');
  const again = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: d.id } });
  t.equal(again.body.last_accessed_at, res.body.last_accessed_at, 'not moved again within the minute');
  t.match(res.body, {
    team_id: a.project.id,
    last_viewed_at: null,
    user_access_level: 'manager',
    access_control_version: 'v1',
  });

  t.test('last_accessed_at is written at most once a minute, only by reads in the project', async (t) => {
    const e = await dashboard(a, { name: 'Throttled' });
    const read = (tenant: Tenant, projectId = tenant.project.id) =>
      call('dashboards_retrieve', { key: tenant.key, params: { project_id: projectId, id: e.id } });
    const stored = async () =>
      (await db.select().from(dashboards).where(eq(dashboards.id, e.id)))[0]!.last_accessed_at!.toISOString();
    const first = (await read(a)).body.last_accessed_at;
    t.equal(await stored(), first, 'the first read writes the time it answers');
    const stale = new Date(Date.now() - 61_000);
    await db.update(dashboards).set({ last_accessed_at: stale }).where(eq(dashboards.id, e.id));
    t.equal((await read(b, b.project.id)).status, 404, "another project's read does not reach it");
    t.equal(await stored(), stale.toISOString(), 'nor records itself on it');
    const later = (await read(a)).body.last_accessed_at;
    t.ok(Date.parse(later) > stale.getTime() + 60_000, 'a read after a minute writes it again');
    t.equal(await stored(), later, 'as answered');
    const recent = new Date(Date.now() - 30_000);
    await db.update(dashboards).set({ last_accessed_at: recent }).where(eq(dashboards.id, e.id));
    t.equal((await read(a)).body.last_accessed_at, recent.toISOString(), 'a read within the minute answers it as is');
    t.equal(await stored(), recent.toISOString(), 'and writes nothing');
  });

  t.test('privileges are computed per caller', async (t) => {
    const member = await makeMember(db, a, 1);
    const admin = await makeMember(db, a, 8);
    const asMember = await call('dashboards_retrieve', { key: member.key, params: { ...params, id: d.id } });
    t.match(asMember.body, { restriction_level: 37, effective_restriction_level: 37, effective_privilege_level: 21 });
    const asAdmin = await call('dashboards_retrieve', { key: admin.key, params: { ...params, id: d.id } });
    t.equal(asAdmin.body.effective_privilege_level, 37);
    const own = await dashboard(a, { restriction_level: 37 }, member.key);
    const asCreator = await call('dashboards_retrieve', { key: member.key, params: { ...params, id: own.id } });
    t.equal(asCreator.body.effective_privilege_level, 37, 'the creator can always edit');
  });

  t.test('not found', async (t) => {
    const other = await dashboard(b);
    t.same((await call('dashboards_retrieve', { key: a.key, params: { ...params, id: other.id } })).body, notFound());
    const sibling = await dashboard(a, {}, a.key, (await makeProject(db, a)).id);
    t.equal((await call('dashboards_retrieve', { key: a.key, params: { ...params, id: sibling.id } })).status, 404);
    t.equal((await call('dashboards_retrieve', { key: a.key, params: { ...params, id: 99999999999 } })).status, 404);
    const bad = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: 'abc' } });
    t.match(bad, { status: 400, body: { attr: 'id' } });
    t.equal((await call('dashboards_retrieve', { key: b.key, params: { ...params, id: d.id } })).status, 403);
  });

  t.test('auth', async (t) => {
    t.equal((await call('dashboards_retrieve', { params: { ...params, id: d.id } })).status, 401);
    const key = await makeKey(db, a.user, ['sharing_configuration:read']);
    t.same(
      (await call('dashboards_retrieve', { key, params: { ...params, id: d.id } })).body,
      denied('dashboard:read'),
    );
  });
});

t.test('format=txt: PostHog’s server-sent event renderer, the same answer as one event', async (t) => {
  const a = await makeTenant(db);
  const b = await makeTenant(db);
  const params = { project_id: a.project.id };
  const d = await dashboard(a, { name: 'Streamed', description: 'line one\nline two' });
  /** The one event's data, read as an EventSource client reads it. */
  const eventData = (raw: string) => {
    t.match(raw, /^data: [^\n]*\n\n$/, 'one event: a data line (JSON escapes the newlines) and a blank line');
    return JSON.parse(raw.slice('data: '.length));
  };
  const json = await call('dashboards_retrieve', { key: a.key, params: { ...params, id: d.id } });
  const txt = await call('dashboards_retrieve', {
    key: a.key,
    params: { ...params, id: d.id },
    query: { format: 'txt' },
  });
  t.equal(txt.status, 200);
  t.equal(txt.headers['content-type'], 'text/event-stream; charset=utf-8');
  t.same(eventData(txt.raw), json.body, 'the data is the JSON answer');
  const list = await call('dashboards_list', { key: a.key, params, query: { format: 'txt' } });
  t.match(eventData(list.raw), { count: 1, next: null, previous: null, results: [{ id: d.id, name: 'Streamed' }] });
  const accepted = await call('dashboards_list', { key: a.key, params, headers: { accept: 'text/event-stream' } });
  t.equal(accepted.raw, list.raw, 'Accept: text/event-stream selects it');
  const both = await call('dashboards_list', {
    key: a.key,
    params,
    headers: { accept: 'text/event-stream, application/json' },
  });
  t.equal(both.body.count, 1, 'JSON when both are acceptable, as DRF orders its renderers');
  const created = await call('dashboards_create', {
    key: a.key,
    params,
    query: { format: 'txt' },
    body: { name: 'New' },
  });
  t.equal(created.status, 201);
  t.match(eventData(created.raw), { name: 'New', tiles: [] }, 'writes render their answer too');
  const patched = await call('dashboards_partial_update', {
    key: a.key,
    params: { ...params, id: d.id },
    query: { format: 'txt' },
    body: { name: 'Renamed' },
  });
  t.match(eventData(patched.raw), { id: d.id, name: 'Renamed' });
  const stream = await call('dashboards_stream_tiles_retrieve', {
    key: a.key,
    params: { ...params, id: d.id },
    query: { format: 'json' },
  });
  t.match(stream.raw, /^data: \{"type":"metadata"/, 'stream_tiles streams whatever format says');
  const missing = await call('dashboards_retrieve', {
    key: b.key,
    params: { project_id: b.project.id, id: d.id },
    query: { format: 'txt' },
  });
  t.match(
    missing,
    { status: 404, headers: { 'content-type': /^application\/json/ }, body: notFound() },
    'errors stay JSON',
  );
  const bad = await call('dashboards_list', { key: a.key, params, query: { format: 'csv' } });
  t.match(bad, { status: 400, body: { code: 'invalid_choice', attr: 'format' } });
});
