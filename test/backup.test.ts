// `npm run cli -- backup` and `restore` as an operator runs them: a copy of a live database, restored
// into a fresh embedded DATA_DIR (and into a fresh database at DATABASE_URL), read back through the API.
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { stopCluster } from '../src/db/embedded.js';
import { buildTestApp } from './helpers/app.js';
import { adminClient, createTestDatabase } from './helpers/db.js';
import { capture } from './helpers/events.js';
import { makeTenant } from './helpers/factories.js';
import { runCli, startServer } from './helpers/server-process.js';

const ctx = await buildTestApp(t);
const a = await makeTenant(ctx.db, 'Backed Up Org');
const P = { project_id: a.project.id };
await ctx.call('dashboards_create', { key: a.key, params: P, body: { name: 'Revenue', tags: ['money'] } });
await capture(ctx, a.project.api_token, [
  { event: 'signed up', distinct_id: 'ann', properties: { plan: 'pro', note: 'tab\there\nnewline \\ slash' } },
  { event: 'signed up', distinct_id: 'bob' },
  { event: 'paid', distinct_id: 'ann', properties: { amount: 12.5 } },
]);

// mkdtemp makes a 0700 folder; as root the embedded cluster runs as `postgres`, which must reach it.
const work = mkdtempSync(join(tmpdir(), 'api-backup-'));
chmodSync(work, 0o755);
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const file = join(work, 'copy.backup');

t.test('backup writes a consistent copy of a running database', async (t) => {
  const run = await runCli(['backup', '--to', file], { DATABASE_URL: ctx.url });
  t.equal(run.code, 0, run.stderr);
  const summary = JSON.parse(run.stdout);
  t.match(summary, { file, tables: Number, rows: Number, bytes: Number });
  t.ok(summary.rows >= 3 + 1 + 1, 'the events, the dashboard and the organization at least');
});

async function readBack(t: Test, url: string) {
  const auth = { authorization: `Bearer ${a.key}` };
  const orgs = (await (await fetch(`${url}/api/organizations/`, { headers: auth })).json()) as any;
  t.same(
    orgs.results.map((o: any) => o.name),
    ['Backed Up Org'],
    'the key and its organization came back',
  );
  const dashboards = (await (
    await fetch(`${url}/api/projects/${a.project.id}/dashboards/`, { headers: auth })
  ).json()) as any;
  t.match(dashboards.results, [{ name: 'Revenue', tags: ['money'] }]);
  const events = (await (await fetch(`${url}/api/projects/${a.project.id}/events/`, { headers: auth })).json()) as any;
  t.equal(events.results.length, 3, 'every event');
  t.same(
    events.results.find((e: any) => e.properties.note)?.properties.note,
    'tab\there\nnewline \\ slash',
    'values with tabs, newlines and backslashes intact',
  );
  // The hourly counts came back as they were, not counted again as the events were loaded (they answer this query).
  const counts = (await (
    await fetch(`${url}/api/projects/${a.project.id}/query/`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        query: { kind: 'HogQLQuery', query: 'select event, count() from events group by event order by event' },
      }),
    })
  ).json()) as any;
  t.same(
    counts.results,
    [
      ['paid', 1],
      ['signed up', 2],
    ],
    'the counts of the events',
  );
  // The sequences came back too: new rows do not collide with restored ones.
  const made = await fetch(`${url}/api/projects/${a.project.id}/dashboards/`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'After restore' }),
  });
  t.equal(made.status, 201, 'a new dashboard after the restore');
}

t.test('restore into a fresh embedded DATA_DIR, then the server reads it', async (t) => {
  const dataDir = join(work, 'data');
  t.teardown(() => stopCluster(dataDir));
  const env = { DATABASE_URL: '', DATA_DIR: dataDir, RATE_LIMITS: 'off' };
  const run = await runCli(['restore', '--from', file], env);
  t.equal(run.code, 0, run.stderr);
  t.match(JSON.parse(run.stdout), { tables: Number, rows: Number });
  const server = startServer(env);
  t.teardown(() => void server.child.kill('SIGKILL'));
  await readBack(t, await server.listening);
  t.notMatch(server.output().stdout, /shown only now/, 'no new owner was bootstrapped over the restored users');
  server.child.kill('SIGTERM');
  await server.exited;
});

t.test('restore into a fresh database at DATABASE_URL', async (t) => {
  const fresh = await createTestDatabase();
  t.teardown(() => fresh.drop());
  const run = await runCli(['restore', '--from', file], { DATABASE_URL: fresh.url });
  t.equal(run.code, 0, run.stderr);
  const server = startServer({ DATABASE_URL: fresh.url, RATE_LIMITS: 'off' });
  t.teardown(() => void server.child.kill('SIGKILL'));
  await readBack(t, await server.listening);
  server.child.kill('SIGTERM');
  await server.exited;
});

t.test('a backup from before event_uuids: the uuids of the restored events are derived from them', async (t) => {
  // The same copy without its event_uuids section, as a version before partitioned events wrote it.
  const lines = gunzipSync(readFileSync(file)).toString('utf8').split('\n');
  const start = lines.findIndex((l) => l.startsWith('{"table":"event_uuids"'));
  t.ok(start > 0, 'the backup holds event_uuids');
  const end = lines.indexOf('\\.', start);
  const older = join(work, 'older.backup');
  writeFileSync(older, gzipSync([...lines.slice(0, start), ...lines.slice(end + 1)].join('\n')));
  const fresh = await createTestDatabase();
  t.teardown(() => fresh.drop());
  const run = await runCli(['restore', '--from', older], { DATABASE_URL: fresh.url });
  t.equal(run.code, 0, run.stderr);
  const sql = adminClient(fresh.url);
  t.teardown(() => sql.end());
  const [r] = await sql`select (select count(*) from events)::int as events, (select count(*) from event_uuids u
    where exists (select from events e where e.project_id = u.project_id and e.uuid = u.uuid
      and e.timestamp = u.timestamp))::int as uuids`;
  t.same(r, { events: 3, uuids: 3 }, 'every restored event has its uuid row');
});

t.test('restore refuses a database that has data, and a damaged file, changing nothing', async (t) => {
  const into = await runCli(['restore', '--from', file], { DATABASE_URL: ctx.url });
  t.equal(into.code, 1);
  t.match(into.stderr, /restore refused: restore needs an empty database/);
  const list = await ctx.call('dashboards_list', { key: a.key, params: P });
  t.equal(list.body.count, 1, 'the live database is untouched');

  const damaged = join(work, 'damaged.backup');
  writeFileSync(damaged, 'not a backup');
  const fresh = await createTestDatabase();
  t.teardown(() => fresh.drop());
  const bad = await runCli(['restore', '--from', damaged], { DATABASE_URL: fresh.url });
  t.equal(bad.code, 1);
  t.match(bad.stderr, /restore refused/);
  const missing = await runCli(['restore', '--from', join(work, 'nope')], { DATABASE_URL: fresh.url });
  t.equal(missing.code, 1);
  t.match(missing.stderr, /restore refused/);
});
