import { createHash } from 'node:crypto';
import t from 'tap';
import { compileProgram } from '../../src/hog-functions/compile.js';
import { runHog } from '../../src/hog-functions/execute.js';
import { TEMPLATES } from '../../src/hog-functions/templates/index.js';

const event = { uuid: 'u', event: 'signed_up', distinct_id: 'd', properties: { email: 'a@b.c', plan: 'pro' } };

t.test('every template compiles for its type', async (t) => {
  for (const tpl of TEMPLATES) {
    const bytecode = await compileProgram(tpl.code, tpl.type);
    t.equal(bytecode[0], '_H', tpl.id);
  }
});

t.test('destination templates build the request PostHog builds', async (t) => {
  const calls: [string, Record<string, unknown>][] = [];
  const fetch = async (url: string, init: Record<string, unknown>) => {
    calls.push([url, init]);
    return { status: 200, body: {} };
  };
  const run = async (id: string, inputs: Record<string, unknown>) => {
    const tpl = TEMPLATES.find((x) => x.id === id)!;
    const res = await runHog(await compileProgram(tpl.code, tpl.type), { event, inputs }, { fetch });
    t.equal(res.error, undefined, id);
    return calls.pop();
  };
  t.same(await run('template-webhook', { url: 'http://x/h', method: 'POST', body: { a: 1 }, headers: { h: 'v' } }), [
    'http://x/h',
    { headers: { h: 'v' }, body: { a: 1 }, method: 'POST' },
  ]);
  t.same(await run('template-slack-webhook', { webhook_url: 'http://s/1', text: 'hi' }), [
    'http://s/1',
    { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: { text: 'hi' } },
  ]);
  t.same(await run('template-discord-webhook', { webhook_url: 'http://d/1', content: 'yo' }), [
    'http://d/1',
    { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: { content: 'yo' } },
  ]);
  t.same(
    await run('template-http-json-post', { url: 'http://j/1', body: { e: 1 }, headers: { k: 'v' }, token: 'tok' }),
    [
      'http://j/1',
      {
        method: 'POST',
        headers: { k: 'v', 'Content-Type': 'application/json', Authorization: 'Bearer tok' },
        body: { e: 1 },
      },
    ],
  );
});

t.test('transformation templates change the event', async (t) => {
  const run = async (id: string, inputs: Record<string, unknown>) => {
    const tpl = TEMPLATES.find((x) => x.id === id)!;
    const copy = structuredClone(event);
    return (await runHog(await compileProgram(tpl.code, tpl.type), { event: copy, inputs })).result as any;
  };
  t.same((await run('template-set-properties', { properties: { a: 1 } })).properties, { ...event.properties, a: 1 });
  t.same((await run('template-remove-properties', { properties: 'email, plan' })).properties, {});
  t.equal(await run('template-drop-events', {}), null);
  const hashed = (await run('template-hash-properties', { properties: 'email', salt: 's' })).properties;
  t.equal(hashed.email, createHash('sha256').update('a@b.cs').digest('hex'), 'salted SHA-256');
  t.equal(hashed.plan, 'pro');
});
