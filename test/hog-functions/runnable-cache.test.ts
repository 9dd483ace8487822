// Each process keeps a project's runnable Hog functions until the project's version changes (bumped by a
// trigger on every write to hog_functions): the batch after a change runs what is stored now, in the
// process that made the change and in any other, and an unchanged project is not read again.
import t from 'tap';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../src/db/client.js';
import { projectByToken } from '../../src/capture/ingest.js';
import { ingestThroughHogFunctions, type PipelineEvent } from '../../src/hog-functions/pipeline.js';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';

let functionLoads = 0;
const ctx = await buildTestApp(t, {}, (text) => {
  if (/^select .* from "hog_functions" where .*"enabled" = /is.test(text)) functionLoads++;
});
const { call, db } = ctx;
const a = await makeTenant(db);
const P = { project_id: a.project.id };

/** Another server process: a pool (and so a cache) of its own on the same database. */
const other = await openDatabase({ url: ctx.url, poolSize: 2 });
ctx.beforeClose(() => other.close());

/** The properties one event leaves ingestion with, in this process or the other. */
async function ingestOne(where: 'here' | 'there', properties: Record<string, unknown> = {}) {
  const database = where === 'here' ? db : other.db;
  const project = await projectByToken(database, a.project.api_token);
  if (!project) throw new Error('no project');
  const event: PipelineEvent = {
    uuid: crypto.randomUUID(),
    event: 'signed_up',
    distinct_id: 'u1',
    properties: { ...properties },
    timestamp: new Date(),
    elements_chain: '',
  };
  let kept: PipelineEvent[] = [];
  const server = { db: database, config: ctx.app.config, jobs: ctx.app.jobs };
  await ingestThroughHogFunctions(server, project, [event], async (batch) => void (kept = batch));
  return kept[0]?.properties;
}

const patch = async (id: string, body: Record<string, unknown>) => {
  const res = await call('hog_functions_partial_update', { key: a.key, params: { ...P, id }, body });
  if (res.status !== 200) throw new Error(res.raw);
};

t.test('a change is seen by the next batch here and in another process; unchanged, nothing is read', async (t) => {
  t.match(await ingestOne('here'), {}, 'no functions yet');
  const created = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: {
      type: 'transformation',
      enabled: true,
      template_id: 'template-set-properties',
      inputs: { properties: { value: { plan: 'one' } } },
    },
  });
  t.equal(created.status, 201, created.raw);
  const id = created.body.id;
  t.match(await ingestOne('here'), { plan: 'one' });
  t.match(await ingestOne('there'), { plan: 'one' });

  const loads = functionLoads;
  for (let i = 0; i < 3; i++) t.match(await ingestOne('here'), { plan: 'one' });
  t.equal(functionLoads, loads, 'an unchanged project is served from the cache');

  await patch(id, { inputs: { properties: { value: { plan: 'two' } } } });
  t.match(await ingestOne('here'), { plan: 'two' }, 'new inputs, this process');
  t.match(await ingestOne('there'), { plan: 'two' }, 'new inputs, the other process');

  await patch(id, { enabled: false });
  t.same(await ingestOne('here'), {}, 'disabled, this process');
  t.same(await ingestOne('there'), {}, 'disabled, the other process');
  await patch(id, { enabled: true });
  t.match(await ingestOne('there'), { plan: 'two' }, 'enabled again');
  await patch(id, { deleted: true });
  t.same(await ingestOne('there'), {}, 'deleted');
});

t.test('a new order and new test account filters reach the other process at once', async (t) => {
  const make = async (value: string, extra: Record<string, unknown> = {}) => {
    const res = await call('hog_functions_create', {
      key: a.key,
      params: P,
      body: {
        type: 'transformation',
        enabled: true,
        template_id: 'template-set-properties',
        inputs: { properties: { value: { last: value } } },
        ...extra,
      },
    });
    if (res.status !== 201) throw new Error(res.raw);
    return res.body.id;
  };
  const first = await make('first');
  const second = await make('second');
  t.match(await ingestOne('there'), { last: 'second' }, 'the second runs last');
  const res = await call('hog_functions_rearrange_partial_update', {
    key: a.key,
    params: P,
    body: { orders: { [first]: 2, [second]: 1 } },
  });
  t.equal(res.status, 200, res.raw);
  t.match(await ingestOne('there'), { last: 'first' }, 'reordered: the first runs last');

  const setTestAccounts = async (filters: unknown[]) => {
    const r = await call('organizations_projects_partial_update', {
      key: a.key,
      params: { organization_id: a.organization.id, id: a.project.id },
      body: { test_account_filters: filters as never },
    });
    if (r.status !== 200) throw new Error(r.raw);
  };
  await setTestAccounts([{ key: 'source', type: 'event', operator: 'exact', value: 'real' }]);
  await make('filtered', { filters: { filter_test_accounts: true } });
  t.match(await ingestOne('there', { source: 'test' }), { last: 'first' }, 'a test account event is not transformed');
  t.match(await ingestOne('there', { source: 'real' }), { last: 'filtered' });
  await setTestAccounts([]);
  t.match(await ingestOne('there', { source: 'test' }), { last: 'filtered' }, 'no test accounts any more');
});

t.test('a project with functions can still be deleted (the trigger skips a project being deleted)', async (t) => {
  const count = async (table: string) =>
    (
      (await db.execute(
        sql.raw(`select count(*)::int as n from ${table} where project_id = ${Number(a.project.id)}`),
      )) as unknown as { n: number }[]
    )[0]?.n;
  t.ok(((await count('hog_functions')) ?? 0) > 0);
  t.equal(await count('hog_function_versions'), 1);
  await db.execute(sql`delete from projects where id = ${a.project.id}`);
  t.equal(await count('hog_functions'), 0);
  t.equal(await count('hog_function_versions'), 0);
});
