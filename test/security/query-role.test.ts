// Query API statements run as a restricted role of their own (read-only on the tables the compiler
// names, nothing else), with temp_file_limit, work_mem and statement_timeout set per transaction; on a
// database whose user may not create roles, the server says so and the per-transaction limits hold.
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import t from 'tap';
import { sqlState } from '../../src/core/sql-state.js';
import type { Db } from '../../src/db/client.js';
import { streamReadOnly, type QueryLimits } from '../../src/query/queries.js';
import { prepareQuerySandbox, QUERY_TABLES, queryRoleName } from '../../src/query/role-queries.js';
import { COUNTS_TABLES, TABLES } from '../../src/hogql/tables.js';
import { rowsOf } from '../../src/db/queries/util.js';
import { buildTestApp } from '../helpers/app.js';
import { adminClient } from '../helpers/db.js';
import { insertEvents } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const ctx = await buildTestApp(t, { queryTempFileLimitMb: 1, queryWorkMemMb: 1 });
const { call, db } = ctx;
const a = await makeTenant(db);
// 38 in this month's partition, 2 in the default partition (1990, a month without a partition).
await insertEvents(
  db,
  a.project.id,
  Array.from({ length: 40 }, (_, i) => ({
    event: 'e',
    distinct_id: `u${i}`,
    ...(i < 2 ? { timestamp: new Date('1990-01-15T00:00:00Z') } : {}),
  })),
);
const limits = ctx.app.queries.limits!;

/** The first column of each row of `statement`, run as Query API statements run. */
async function asQuery(statement: ReturnType<typeof sql>, l: QueryLimits = limits, on: Db = db) {
  const rows: unknown[] = [];
  await streamReadOnly(on, statement, {
    timeoutMs: 5000,
    limits: l,
    onRow: (json) => rows.push(JSON.parse(json.toString())[0]) > 0,
  });
  return rows;
}

t.test('statements run as the database’s own restricted role, with the limits set', async (t) => {
  const [database] = rowsOf<{ db: string }>(await db.execute(sql`select current_database() as db`));
  t.equal(limits.role, queryRoleName(database!.db), 'a role named after this database');
  t.same(await asQuery(sql`select json_build_array(current_user::text)`), [limits.role], 'current_user is the role');
  const settings: unknown[][] = [];
  await streamReadOnly(
    db,
    sql`select json_build_array(current_setting('work_mem'), current_setting('temp_file_limit'),
      current_setting('statement_timeout'), current_setting('transaction_read_only'))`,
    {
      timeoutMs: 5000,
      limits,
      onRow: (json) => settings.push(JSON.parse(json.toString())) > 0,
    },
  );
  t.same(settings, [['1MB', '1MB', '5s', 'on']]);
  const [after] = rowsOf<{ u: string; w: string }>(
    await db.execute(sql`select current_user::text as u, current_setting('work_mem') as w`),
  );
  t.not(after!.u, limits.role, 'the role ends with the transaction');
});

t.test('it reads the tables the compiler names, and nothing else', async (t) => {
  // A table the compiler starts to name must be granted too, or its queries fail with permission denied.
  t.same([...QUERY_TABLES].sort(), [...TABLES, ...COUNTS_TABLES].sort(), "the role's tables are the compiler's");
  t.same(await asQuery(sql`select json_build_array(count(*)) from events`), [40]);
  t.same(
    await asQuery(sql`select json_build_array(count(*)) from events where timestamp < '2000-01-01'`),
    [2],
    "events reads every partition's rows, the default partition's too",
  );
  // The partitions are read through events only; the uuids behind deduplication are not the compiler's.
  const month = `events_p${new Date().toISOString().slice(0, 7).replace('-', '_')}`;
  for (const table of ['users', 'personal_api_keys', 'organizations', 'query_statuses', 'batch_exports'].concat([
    'event_uuids',
    'events_default',
    month,
  ])) {
    const err = await asQuery(sql`select json_build_array(count(*)) from ${sql.identifier(table)}`).catch((e) => e);
    t.equal(sqlState(err), '42501', `${table}: permission denied`);
  }
  // The insight kinds read a project's timezone: that column and its id, never its token.
  t.same(await asQuery(sql`select json_build_array(count(timezone) > 0) from projects`), [true]);
  const token = await asQuery(sql`select json_build_array(api_token) from projects`).catch((e) => e);
  t.equal(sqlState(token), '42501', "a project's token: permission denied");
  const write = await asQuery(sql`insert into events (project_id) values (1) returning json_build_array(1)`).catch(
    (e) => e,
  );
  t.ok(['25006', '42501'].includes(sqlState(write) ?? ''), `a write is refused (${sqlState(write)})`);
});

t.test('a query spilling more than temp_file_limit is a clear 400', async (t) => {
  const res = await call('query_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: {
      query: {
        kind: 'HogQLQuery',
        query:
          'select count() from (select distinct concat(x.uuid, y.uuid, z.uuid) as k ' +
          'from events x cross join events y cross join events z)',
      },
    },
  });
  t.equal(res.status, 400, res.raw);
  t.match(res.body, {
    type: 'validation_error',
    code: 'memory_limit_exceeded',
    detail: /more than the 1 MB of temporary disk space/,
    attr: null,
  });
});

t.test('a database user that may not create roles: one warning, and the limits still hold', async (t) => {
  const name = `t_${randomBytes(6).toString('hex')}_app`;
  const admin = adminClient(ctx.url);
  await admin.unsafe(`create role ${name} login`);
  await admin.unsafe(`grant select on events to ${name}`);
  const url = new URL(ctx.url);
  url.username = name;
  url.password = '';
  const { default: postgres } = await import('postgres');
  const client = postgres(url.searchParams.get('host') ? url.toString().replace(/\?.*$/, '') : url.toString(), {
    ...(url.searchParams.get('host') ? { host: url.searchParams.get('host')! } : {}),
    max: 1,
    onnotice: () => {},
  });
  t.teardown(async () => {
    await client.end();
    await admin.unsafe(`drop owned by ${name}`);
    await admin.unsafe(`drop role ${name}`);
    await admin.end();
  });
  const plain = drizzle({ client }) as unknown as Db;
  const sandbox = await prepareQuerySandbox(plain, { tempFileLimitMb: 1, workMemMb: 2 });
  t.same(sandbox.limits, { role: null, tempFileLimitMb: null, workMemMb: 2 });
  t.match(sandbox.warning, /may not create roles.*may not set temp_file_limit/);
  t.same(
    await asQuery(
      sql`select json_build_array(current_setting('work_mem') || ' ' || current_setting('transaction_read_only'))`,
      sandbox.limits,
      plain,
    ),
    ['2MB on'],
    'work_mem and read-only still set per transaction',
  );
  const slow = await asQuery(sql`select json_build_array(pg_sleep(10))`, sandbox.limits, plain).catch((e) => e);
  t.equal(sqlState(slow), '57014', 'and the statement timeout');
});
