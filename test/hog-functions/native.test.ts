// Our templates' transformations as plain code answer exactly what PostHog's VM answers for their bytecode:
// each case runs both on the same event and inputs and compares the events they leave (key order included).
import t from 'tap';
import { compileProgram } from '../../src/hog-functions/compile.js';
import { runHog } from '../../src/hog-functions/execute.js';
import { nativeProgramOf, plainCost } from '../../src/hog-functions/native.js';
import { TEMPLATES } from '../../src/hog-functions/templates/index.js';

type Json = Record<string, unknown>;

const bytecodeOf = async (id: string) => {
  const tpl = TEMPLATES.find((x) => x.id === id)!;
  return compileProgram(tpl.code, tpl.type);
};

/** The event's properties after the VM's run: null when it dropped the event, the error text when it failed. */
async function vmAnswer(bytecode: unknown[], properties: Json, inputs: Json) {
  const event = { uuid: 'u1', event: 'e', distinct_id: 'd', properties, timestamp: '2026-01-01T00:00:00.000Z' };
  const run = await runHog(bytecode, { event, inputs });
  if (run.error) return { error: run.error };
  return run.result === null ? null : { properties: (run.result as Json).properties };
}

const keyed = (v: unknown) => JSON.stringify(v);

const events: Json[] = [
  {},
  { plan: 'pro', $ip: '127.0.0.1', n: 3, f: 1.5, b: false, z: null },
  { nested: { a: [1, { b: 'c' }], d: {} }, list: ['x', 2, null], '10': 'ten', '2': 'two', emoji: 'é😀' },
  { t1: 'old', keep: 'yes', ' spaced ': 1, '': 'empty key' },
  JSON.parse('{"a": 1, "b": -0, "c": 1e300}'),
];

t.test('template-set-properties: same properties as the VM, inputs copied', async (t) => {
  const bytecode = await bytecodeOf('template-set-properties');
  const native = (await nativeProgramOf('transformation', bytecode))!;
  t.ok(native, 'the stored program is recognised');
  const inputsList: Json[] = [
    { properties: { t1: 'yes' } },
    { properties: { plan: 'free', added: { deep: [1, 2] }, '3': 'three', none: null } },
    { properties: {} },
  ];
  for (const properties of events) {
    for (const inputs of inputsList) {
      const answer = native(structuredClone(properties), inputs);
      t.not(answer, undefined, `answered for ${keyed(properties)}`);
      t.equal(keyed(answer), keyed(await vmAnswer(bytecode, structuredClone(properties), inputs)), keyed(inputs));
    }
  }
  const inputs = { properties: { added: { deep: [1] } } };
  const out = native({}, inputs) as { properties: Json };
  (out.properties.added as Json).deep = [];
  t.same(inputs.properties.added.deep, [1], 'an event never holds the inputs’ own objects');
});

t.test('template-remove-properties: same properties as the VM', async (t) => {
  const bytecode = await bytecodeOf('template-remove-properties');
  const native = (await nativeProgramOf('transformation', bytecode))!;
  t.ok(native);
  for (const properties of events) {
    for (const list of ['plan', ' plan , $ip,n', 'nested,10,', '  spaced  ,', ',', 'nothing', '']) {
      const answer = native(structuredClone(properties), { properties: list });
      t.not(answer, undefined);
      const vm = await vmAnswer(bytecode, structuredClone(properties), { properties: list });
      t.equal(keyed(answer), keyed(vm), `${keyed(list)} from ${keyed(properties)}`);
    }
  }
});

t.test('template-hash-properties: same hashes as the VM, with and without a salt', async (t) => {
  const bytecode = await bytecodeOf('template-hash-properties');
  const native = (await nativeProgramOf('transformation', bytecode))!;
  t.ok(native);
  const cases: [Json, Json][] = [
    [
      { email: 'a@b.c', plan: 'pro', n: 3 },
      { properties: 'email', salt: 's' },
    ],
    [
      { email: 'é😀', name: 'x', z: null },
      { properties: ' email , name,z', salt: null },
    ],
    [{ email: '', other: { a: 1 } }, { properties: 'email,missing' }],
    [
      { '10': 'ten', email: 'e' },
      { properties: '10', salt: 'pepper' },
    ],
  ];
  for (const [properties, inputs] of cases) {
    const answer = native(structuredClone(properties), inputs);
    t.not(answer, undefined);
    const vm = await vmAnswer(bytecode, structuredClone(properties), inputs);
    t.equal(keyed(answer), keyed(vm), `${keyed(inputs)} on ${keyed(properties)}`);
  }
  // Hog prints numbers and objects its own way before hashing them: the VM's to do.
  t.equal(native({ email: 5 }, { properties: 'email' }), undefined);
  t.equal(native({ email: 'a' }, { properties: 'email', salt: 5 }), undefined);
});

t.test('template-drop-events drops as the VM does', async (t) => {
  const bytecode = await bytecodeOf('template-drop-events');
  const native = (await nativeProgramOf('transformation', bytecode))!;
  t.equal(native({ a: 1 }, {}), null);
  t.equal(await vmAnswer(bytecode, { a: 1 }, {}), null);
});

t.test('what the code cannot answer exactly is left to the VM', async (t) => {
  const set = (await nativeProgramOf('transformation', await bytecodeOf('template-set-properties')))!;
  const remove = (await nativeProgramOf('transformation', await bytecodeOf('template-remove-properties')))!;
  // The VM's conversions treat these specially (prototype keys, date and closure markers).
  t.equal(set(JSON.parse('{"__proto__": {"x": 1}}'), { properties: { a: 1 } }), undefined);
  t.equal(set({}, JSON.parse('{"properties": {"__proto__": {"x": 1}}}')), undefined);
  t.equal(set({ d: { __hogDateTime__: true, dt: 1, zone: 'UTC', extra: 1 } }, { properties: {} }), undefined);
  t.equal(remove({ c: { nested: { __hogClosure__: true } } }, { properties: 'a' }), undefined);
  // Inputs of another shape than the template's.
  t.equal(set({}, { properties: 'not a dict' }), undefined);
  t.equal(set({}, { properties: [1] }), undefined);
  t.equal(remove({}, { properties: ['a'] }), undefined);
  // A large event: the VM's memory and time limits are its to apply.
  t.equal(set({ big: 'x'.repeat(70_000) }, { properties: {} }), undefined);
  t.equal(remove({ many: Array.from({ length: 10_000 }, (_, i) => i) }, { properties: 'a' }), undefined);
  t.equal(plainCost({ a: 'bc' }), 8 + 8 + 1 + 8 + 2);
  t.equal(plainCost(new Date()), -1);
});

t.test('a changed program, or one of another type, runs on the VM', async (t) => {
  const bytecode = await bytecodeOf('template-set-properties');
  t.equal(await nativeProgramOf('destination', bytecode), null);
  const changed = await compileProgram(
    TEMPLATES.find((x) => x.id === 'template-set-properties')!.code.replace('return returnEvent', 'return event'),
    'transformation',
  );
  t.equal(await nativeProgramOf('transformation', changed), null);
  t.equal(await nativeProgramOf('transformation', await bytecodeOf('template-webhook')), null);
});
