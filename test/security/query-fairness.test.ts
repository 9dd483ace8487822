// One organization flooding the Query API with cross joins (synchronous and asynchronous) must not make
// another organization wait: its trivial `select 1` answers in under a second (the bound; before
// per-organization slots it waited for the flood, up to the statement timeout).
import { sql } from 'drizzle-orm';
import t from 'tap';
import { rowsOf } from '../../src/db/queries/util.js';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t, { queryTimeoutSeconds: 10 });
const { call, db } = ctx;
const x = await makeTenant(db);
const o = await makeTenant(db);
await insertEvents(
  db,
  x.project.id,
  Array.from({ length: 12 }, (_, i) => ({ event: 'e', distinct_id: `u${i}` })),
);

/** 12^10 rows: runs until cancelled or timed out. */
const CROSS =
  'select count() from events a cross join events b cross join events c cross join events d cross join events e ' +
  'cross join events f cross join events g cross join events h cross join events i cross join events j';

const hogql = (tenant: typeof x, query: string, extra: Record<string, unknown> = {}) =>
  call('query_create', {
    key: tenant.key,
    params: { project_id: tenant.project.id },
    body: { query: { kind: 'HogQLQuery', query }, ...extra },
  });

/** Statements running in this test's database, other than the one asking. */
async function active(): Promise<number> {
  const [row] = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from pg_stat_activity where datname = current_database()
      and state = 'active' and pid <> pg_backend_pid() and query ilike '%cross join%'`),
  );
  return row!.n;
}

async function until(what: string, check: () => Promise<boolean>, ms = 10_000) {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

t.test("another organization's select 1 answers in under a second during a flood", async (t) => {
  // X: six asynchronous and four synchronous cross joins, more than every slot of the process.
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await hogql(x, CROSS, { refresh: 'async', client_query_id: `flood-${i}` });
    t.equal(res.status, 202);
    ids.push(res.body.query_status.id);
  }
  const sync = Array.from({ length: 4 }, () => hogql(x, CROSS));
  await until('the flood to run', async () => (await active()) >= 2);

  let start = Date.now();
  const res = await hogql(o, 'select 1');
  const syncMs = Date.now() - start;
  t.same([res.status, res.body.results], [200, [[1]]]);
  t.ok(syncMs < 1000, `synchronous select 1 of another organization answered in ${syncMs} ms`);

  start = Date.now();
  const started = await hogql(o, 'select 1', { refresh: 'force_async', client_query_id: 'o-1' });
  t.equal(started.status, 202);
  let status = await call('query_retrieve', { key: o.key, params: { project_id: o.project.id, id: 'o-1' } });
  while (status.status === 202 && Date.now() - start < 15_000) {
    await new Promise((r) => setTimeout(r, 10));
    status = await call('query_retrieve', { key: o.key, params: { project_id: o.project.id, id: 'o-1' } });
  }
  const asyncMs = Date.now() - start;
  t.equal(status.status, 200);
  t.ok(asyncMs < 1000, `asynchronous select 1 of another organization complete in ${asyncMs} ms`);

  t.ok((await active()) <= ctx.app.config.queryConcurrencyPerOrganization, 'X runs no more than its share');

  // The flood ends: X's asynchronous queries are cancelled, and its synchronous ones stopped.
  for (const id of ids) await call('query_destroy', { key: x.key, params: { project_id: x.project.id, id } });
  await db.execute(sql`select pg_cancel_backend(pid) from pg_stat_activity where datname = current_database()
    and state = 'active' and pid <> pg_backend_pid() and query ilike '%cross join%'`);
  const ended = await Promise.all(sync);
  // A synchronous one that was still waiting for a slot may have started after the cancel: it ends by
  // the statement timeout, a 400 too.
  t.same(
    ended.map((r) => r.status),
    [400, 400, 400, 400],
  );
});

t.test("a flood of slow parses: another organization's query is parsed at its turn, not after the flood", async (t) => {
  // Each of X's texts takes PostHog's parser past its 3 s limit (20 levels of parentheses, 48 times over),
  // and each differs, so none is answered from the parsed texts kept.
  const slow = (n: number) =>
    `select ${Array.from({ length: 48 }, (_, i) => `${'('.repeat(20)}${n * 100 + i}${')'.repeat(20)}`).join(', ')}`;
  const order: string[] = [];
  const floods = [1, 2, 3].map((n) =>
    hogql(x, slow(n)).then((res) => {
      t.match(res.body.detail, /longer than 3 seconds to parse/);
      order.push(`x${n}`);
    }),
  );
  await new Promise((r) => setTimeout(r, 100));
  const mine = await hogql(o, 'select 1 as one');
  order.push('o');
  t.same([mine.status, mine.body.results], [200, [[1]]]);
  await Promise.all(floods);
  // Taken in turns: O's parse right after the one of X's in hand (the first, or the second had the thread
  // started with it), never after X's whole queue.
  t.ok(order.indexOf('o') < 2, `answered in turn: ${order.join(', ')}`);
});

t.test('an organization with too many queries waiting gets a 429 in PostHog shape', async (t) => {
  const { queryConcurrencyPerOrganization: slots, queryQueuePerOrganization: queue } = ctx.app.config;
  const ids: string[] = [];
  let refused: Awaited<ReturnType<typeof hogql>> | undefined;
  for (let i = 0; i < slots + queue + 1 && !refused; i++) {
    const res = await hogql(x, CROSS, { refresh: 'async', client_query_id: `q-${i}` });
    if (res.status === 202) ids.push(res.body.query_status.id);
    else refused = res;
  }
  t.ok(refused, 'one over the queue is refused');
  t.equal(refused!.status, 429);
  t.match(refused!.body, { type: 'throttled_error', code: 'throttled', detail: /waiting to run/, attr: null });
  t.ok(Number(refused!.headers['retry-after']) >= 1, 'with Retry-After');
  t.equal(ids.length, slots + queue, 'every query up to the queue was accepted');
  t.equal((await hogql(o, 'select 1')).status, 200, 'another organization is not refused');
  for (const id of ids) await call('query_destroy', { key: x.key, params: { project_id: x.project.id, id } });
  await until('the queue to drain', async () => ctx.app.queries.limiter.stats().running === 0, 20_000);
});
