// PostHog's per-key throttles hold for all processes on one database together: two server processes
// share the counters (rate_limit_counters), so a key gets the limit in all, not the limit per process,
// with the 429 + Retry-After of a single process. Refused requests are not counted; counters whose
// windows have run out are deleted.
import { sql } from 'drizzle-orm';
import t from 'tap';
import { rowsOf } from '../../src/db/queries/util.js';
import { RateLimiter, parseRate } from '../../src/http/rate-limit.js';
import { sweepRateLimits } from '../../src/http/rate-limit-queries.js';
import { openTestDatabase } from '../helpers/db.js';
import { makeKey, makeTenant } from '../helpers/factories.js';
import { startServer } from '../helpers/server-process.js';

const { database, url, drop } = await openTestDatabase();
const db = database.db;
const a = await makeTenant(db);
const env = {
  DATABASE_URL: url,
  WORKER: '0',
  RATE_LIMITS: 'on',
  RATE_LIMIT_BURST: '10/minute',
  RATE_LIMIT_SUSTAINED: '1000/hour',
  RATE_LIMIT_QUERY_BURST: '4/minute',
  RATE_LIMIT_QUERY_SUSTAINED: '100/hour',
};
const servers = [startServer(env), startServer(env)];
t.teardown(async () => {
  for (const s of servers) s.child.kill('SIGTERM');
  await Promise.all(servers.map((s) => s.exited));
  await database.close();
  await drop();
});
const [one, two] = await Promise.all(servers.map((s) => s.listening));

const me = (base: string, key: string) =>
  fetch(`${base}/api/users/@me/`, { headers: { authorization: `Bearer ${key}` } });

t.test('the burst limit holds for both processes together, even for requests sent at once', async (t) => {
  // 16 requests at once, alternating between the processes: 10 pass in all (5 each would be 20 per
  // process-local counting), the other 6 get PostHog's 429.
  const answers = await Promise.all(Array.from({ length: 16 }, (_, i) => me(i % 2 ? two! : one!, a.key)));
  const statuses = answers.map((r) => r.status);
  t.equal(statuses.filter((s) => s === 200).length, 10, 'ten answered');
  t.equal(statuses.filter((s) => s === 429).length, 6, 'six throttled');
  const refused = answers.find((r) => r.status === 429)!;
  t.same(await refused.json(), {
    type: 'throttled_error',
    code: 'throttled',
    detail: 'Request was throttled.',
    attr: null,
  });
  const retry = Number(refused.headers.get('retry-after'));
  t.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${retry} s, within the minute`);
  for (const base of [one!, two!]) t.equal((await me(base, a.key)).status, 429, 'both processes refuse the key now');
  await Promise.all(answers.filter((r) => !r.bodyUsed).map((r) => r.body?.cancel()));
  const [row] = rowsOf<{ burst_count: number }>(
    await db.execute(sql`select burst_count from rate_limit_counters where scope = 'api' and key = ${a.key}`),
  );
  t.notOk(row, 'counters are keyed by the key id, never its value');
  const other = await makeKey(db, a.user);
  t.equal((await me(two!, other)).status, 200, 'another key has its own budget');
});

t.test('the Query API throttle is shared too, and separate from the general one', async (t) => {
  const b = await makeTenant(db);
  const query = (base: string) =>
    fetch(`${base}/api/projects/${b.project.id}/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${b.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: { kind: 'HogQLQuery', query: 'select 1' } }),
    });
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await query(i % 2 ? two! : one!)).status);
  t.same(statuses, [200, 200, 200, 200, 429, 429], 'four queries a minute across both processes');
  t.equal((await me(one!, b.key)).status, 200, 'the rest of the API keeps its own budget');
});

t.test('refused requests are not counted, windows restart, and run-out counters are deleted', async (t) => {
  const limiter = new RateLimiter(db, 'probe', [parseRate('2/second'), parseRate('3/minute')]);
  const at = Date.now() - 3 * 3_600_000;
  await limiter.hit('k', at);
  await limiter.hit('k', at + 10);
  const refused = await limiter.hit('k', at + 20).then(
    () => undefined,
    (err: { statusCode?: number; headers?: Record<string, string> }) => err,
  );
  t.same([refused?.statusCode, refused?.headers?.['retry-after']], [429, '1'], 'the burst is full for a second');
  await limiter.hit('k', at + 1_000);
  const sustained = await limiter.hit('k', at + 2_000).then(
    () => undefined,
    (err: { headers?: Record<string, string> }) => err,
  );
  t.equal(sustained?.headers?.['retry-after'], '58', 'three a minute (the refused one not counted), until it ends');
  await limiter.hit('k', at + 60_000);
  t.pass('a new minute lets it through');
  await sweepRateLimits(db);
  const [left] = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from rate_limit_counters where scope = 'probe'`),
  );
  t.equal(left!.n, 0, 'the counter of windows long run out is deleted');
});
