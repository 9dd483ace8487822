// Random HogQL against the Query API. Whatever the query says: a 200 or a 400 (never a 5xx), the
// answer is the contract's, no value of another project ever comes back, and the compiled SQL reads
// tables only through the project-scoped sources.
//
// FUZZ_SEED=<n> reproduces a run; FUZZ_RUNS sets the number of queries.
import fc from 'fast-check';
import { PgDialect } from 'drizzle-orm/pg-core';
import t from 'tap';
import { compileQuery, parseQuery, QueryError } from '../../src/hogql/index.js';
import { buildTestApp } from '../helpers/app.js';
import { insertEvents, insertPerson } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';
import { queryText, values } from './query-arbitraries.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
/** Every value of the second project carries it; nothing of the first does, and no generated query says it. */
const MARK = 'ZQXMARK';

const ctx = await buildTestApp(t);
const { db } = ctx;
const a = await makeTenant(db);
const b = await makeTenant(db);
const ann = await insertPerson(db, a.project.id, ['ann', 'ann-2'], { plan: 'pro', email: 'ann@x.io' });
await insertEvents(db, a.project.id, [
  {
    event: 'signup',
    distinct_id: 'ann',
    person_id: ann.id,
    timestamp: new Date('2024-05-01T10:00:00Z'),
    properties: { $browser: 'Chrome', price: 12, nested: { k: 'v' } },
  },
  {
    event: '$pageview',
    distinct_id: 'ann-2',
    person_id: ann.id,
    timestamp: new Date('2024-05-02T10:00:00Z'),
    properties: { $browser: 'Firefox', price: '7.5', 'weird key': 'x' },
  },
  {
    event: '$pageview',
    distinct_id: 'anon',
    timestamp: new Date('2024-05-03T10:00:00Z'),
    properties: { price: 'n/a' },
  },
]);
const zed = await insertPerson(db, b.project.id, [`${MARK}-zed`, 'ann'], {
  plan: MARK,
  email: `${MARK}@b.io`,
  [MARK]: MARK,
});
await insertEvents(db, b.project.id, [
  {
    event: MARK,
    distinct_id: `${MARK}-zed`,
    person_id: zed.id,
    timestamp: new Date('2024-05-01T10:00:00Z'),
    properties: { $browser: MARK, price: MARK, nested: { k: MARK }, [MARK]: MARK },
    elements_chain: MARK,
  },
  {
    event: 'signup',
    distinct_id: 'ann',
    person_id: zed.id,
    timestamp: new Date('2024-05-01T10:00:00Z'),
    properties: { $browser: MARK, 'weird key': MARK },
  },
]);

const dialect = new PgDialect();
/** The table sources compile to these texts; nothing else in a statement may name a table. */
const SOURCE =
  /\(select (ev\.uuid|p\.uuid, p\.properties|d\.distinct_id)[\s\S]*?where (ev|p|d)\.project_id = \$(\d+)::int\)/g;

async function checkCompiled(text: string, vars: Record<string, unknown>) {
  let select: Awaited<ReturnType<typeof parseQuery>>;
  try {
    select = await parseQuery(text);
  } catch (err) {
    if (err instanceof QueryError) return;
    throw err;
  }
  let compiled: ReturnType<typeof compileQuery>;
  try {
    compiled = compileQuery(select, { teamId: a.project.id, values: vars });
  } catch (err) {
    if (err instanceof QueryError) return;
    throw err;
  }
  const { sql, params } = dialect.sqlToQuery(compiled.sql);
  const teamParams = [...sql.matchAll(/project_id = \$(\d+)::int/g)].map((m) => params[Number(m[1]) - 1]);
  if (teamParams.some((p) => p !== a.project.id)) throw new Error(`a project filter is bound to another value: ${sql}`);
  const rest = sql.replace(SOURCE, '(source)');
  if (
    /\b(events|persons|person_distinct_ids|organizations|users|pg_\w+|information_schema)\b/i.test(
      rest.replace(/"[^"]*"/g, ''),
    )
  ) {
    throw new Error(`a table outside the scoped sources: ${rest}`);
  }
  if (rest.includes(';')) throw new Error(`a second statement: ${rest}`);
}

t.test('random queries: 200 or 400, only the project rows, scoped SQL', async (t) => {
  let ok = 0;
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(queryText, values, async (text, vars) => {
      await checkCompiled(text, vars);
      const res = await ctx.call('query_create', {
        key: a.key,
        params: { project_id: a.project.id },
        body: { query: { kind: 'HogQLQuery', query: text, values: vars } },
      });
      if (res.status !== 200 && res.status !== 400)
        throw new Error(`${res.status} for ${JSON.stringify(text)}: ${res.raw}`);
      if (res.raw.includes(MARK))
        throw new Error(`another project's value came back for ${JSON.stringify(text)}: ${res.raw.slice(0, 500)}`);
      if (process.env.FUZZ_DEBUG) console.error(res.status, text, res.raw.slice(0, 200));
      if (res.status === 200) ok++;
      else refused++;
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  t.ok(ok > RUNS / 10, `${ok} queries answered, ${refused} refused`);
});

t.test('the second project is really there', async (t) => {
  const res = await ctx.call('query_create', {
    key: b.key,
    params: { project_id: b.project.id },
    body: { query: { kind: 'HogQLQuery', query: 'select event from events order by event' } },
  });
  t.ok(res.raw.includes(MARK), 'its own key reads its marked rows, so the check above can fail');
});
