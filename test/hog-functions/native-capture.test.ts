// Through capture: our templates' programs run as plain code store the events the VM's runs store, and the
// counters of many concurrent requests (written together) add up to every event.
import t from 'tap';
import { sql } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { TEMPLATES } from '../../src/hog-functions/templates/index.js';
import { nativeProgramOf } from '../../src/hog-functions/native.js';

const ctx = await buildTestApp(t);
const { call, db } = ctx;
const a = await makeTenant(db);
const P = { project_id: a.project.id };

async function capture(events: { event: string; properties?: Record<string, unknown> }[]) {
  const res = await ctx.inject({
    method: 'POST',
    url: '/batch/',
    payload: { api_key: a.project.api_token, batch: events.map((e) => ({ distinct_id: 'u1', properties: {}, ...e })) },
  });
  if (res.statusCode !== 200) throw new Error(`capture answered ${res.statusCode}: ${res.body}`);
}

const stored = async (name: string) =>
  (
    (await db.execute(
      sql`select properties from events where project_id = ${a.project.id} and event = ${name} order by
        (properties->>'n')::int`,
    )) as unknown as { properties: Record<string, unknown> }[]
  ).map((r) => {
    const { $ip: _ip, ...rest } = r.properties;
    return rest;
  });

const create = async (body: Record<string, unknown>) => {
  const res = await call('hog_functions_create', {
    key: a.key,
    params: P,
    body: { type: 'transformation', enabled: true, ...body },
  });
  if (res.status !== 201) throw new Error(res.raw);
  return res.body.id as string;
};
const disable = (id: string) =>
  call('hog_functions_partial_update', { key: a.key, params: { ...P, id }, body: { enabled: false } });
const totals = async (id: string) =>
  (await call('hog_functions_metrics_totals_retrieve', { key: a.key, params: { ...P, id } })).body.totals;

const codeOf = (id: string) => TEMPLATES.find((x) => x.id === id)!.code;
// A first line that changes the compiled program (a local shifts the others) and nothing it does.
const onTheVm = (id: string) => `let unused := 1\n${codeOf(id)}`;

const properties = (n: number) => ({
  n,
  plan: 'pro',
  secret: `s${n}`,
  nested: { a: [1, { b: n }] },
  '7': 'seven',
  ...(n % 2 ? { kept: null } : {}),
});

t.test('set and remove, as templates and as changed programs, store the same events', async (t) => {
  const run = async (name: string, vm: boolean) => {
    const set = await create({
      ...(vm ? { hog: onTheVm('template-set-properties') } : { template_id: 'template-set-properties' }),
      inputs_schema: TEMPLATES.find((x) => x.id === 'template-set-properties')!.inputs_schema,
      inputs: { properties: { value: { plan: 'team', added: 'yes', '3': 'three' } } },
    });
    const remove = await create({
      ...(vm ? { hog: onTheVm('template-remove-properties') } : { template_id: 'template-remove-properties' }),
      inputs_schema: TEMPLATES.find((x) => x.id === 'template-remove-properties')!.inputs_schema,
      inputs: { properties: { value: ' secret , kept' } },
    });
    for (const id of [set, remove]) {
      const [row] = (await db.execute(sql`select bytecode from hog_functions where id = ${id}`)) as unknown as {
        bytecode: unknown[];
      }[];
      t.equal(!!(await nativeProgramOf('transformation', row?.bytecode)), !vm, vm ? 'runs on the VM' : 'plain code');
    }
    await capture(Array.from({ length: 6 }, (_, n) => ({ event: name, properties: properties(n) })));
    t.match(await totals(set), { succeeded: 6 });
    t.match(await totals(remove), { succeeded: 6 });
    await disable(set);
    await disable(remove);
    return stored(name);
  };
  const plain = await run('as-template', false);
  const vm = await run('as-changed-program', true);
  t.equal(plain.length, 6);
  t.equal(JSON.stringify(plain), JSON.stringify(vm), 'same properties, same key order');
  t.same(plain[1], { '3': 'three', '7': 'seven', n: 1, plan: 'team', nested: { a: [1, { b: 1 }] }, added: 'yes' });
});

t.test('the drop template drops what its filters match, as plain code', async (t) => {
  const drop = await create({
    template_id: 'template-drop-events',
    filters: { events: [{ id: 'noise', type: 'events' }] },
  });
  await capture([
    { event: 'noise', properties: { n: 1 } },
    { event: 'signal', properties: { n: 2 } },
  ]);
  t.same(await stored('noise'), []);
  t.equal((await stored('signal')).length, 1);
  t.match(await totals(drop), { dropped: 1, filtered: 1 });
  await disable(drop);
});

t.test('counters of concurrent requests add up', async (t) => {
  const set = await create({
    template_id: 'template-set-properties',
    inputs: { properties: { value: { c: 'yes' } } },
  });
  await Promise.all(
    Array.from({ length: 20 }, (_, r) =>
      capture(Array.from({ length: 5 }, (_, i) => ({ event: 'many', properties: { n: r * 5 + i } }))),
    ),
  );
  const rows = await stored('many');
  t.equal(rows.length, 100);
  t.ok(rows.every((p) => p.c === 'yes'));
  t.match(await totals(set), { succeeded: 100 });
  await disable(set);
});
