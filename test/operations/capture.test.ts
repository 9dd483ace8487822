import t from 'tap';
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { PostHog } from 'posthog-node';
import { eq } from 'drizzle-orm';
import { projects } from '../../src/db/schema/index.js';
import { buildTestApp } from '../helpers/app.js';
import { makeProject, makeTenant } from '../helpers/factories.js';
import { personOf, send, storedEvents } from '../helpers/events.js';

const ctx = await buildTestApp(t);
const { db } = ctx;
const address = await ctx.app.listen({ port: 0, host: '127.0.0.1' });

t.test('posthog-node sends to the server and everything is stored', async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  const errors: unknown[] = [];
  const client = new PostHog(token, { host: address, flushAt: 20, flushInterval: 0, fetchRetryCount: 0 });
  client.on('error', (e) => errors.push(e));
  const uuid = randomUUID();
  client.capture({ distinctId: 'user-1', event: 'signed up', properties: { plan: 'pro' }, uuid });
  client.capture({
    distinctId: 'user-1',
    event: 'clicked',
    properties: { n: 1 },
    timestamp: new Date('2024-03-01T10:00:00Z'),
  });
  client.capture({ distinctId: 'user-2', event: 'clicked', groups: { company: 'acme' } });
  client.identify({ distinctId: 'user-1', properties: { email: 'one@example.com' } });
  await client.shutdown();
  t.same(errors, [], 'the client saw no error');

  const rows = await storedEvents(db, a.project.id);
  t.equal(rows.length, 4);
  const signedUp = rows.find((r) => r.event === 'signed up')!;
  t.equal(signedUp.uuid, uuid, "the client's uuid is kept");
  t.equal(signedUp.properties.plan, 'pro');
  t.equal(signedUp.properties.$lib, 'posthog-node');
  const clicked = rows.find((r) => r.event === 'clicked' && r.distinct_id === 'user-1')!;
  // posthog-node sends sent_at, so the stored time is corrected by the request's time in transit.
  const drift = clicked.timestamp.getTime() - Date.parse('2024-03-01T10:00:00Z');
  t.ok(drift >= 0 && drift < 5000, `a custom timestamp is honoured (off by ${drift} ms in transit)`);
  t.same(rows.find((r) => r.distinct_id === 'user-2')!.properties.$groups, { company: 'acme' });
  const person = await personOf(db, a.project.id, 'user-1');
  t.same(person?.properties, { email: 'one@example.com' }, 'identify set the person properties');
  t.equal(person?.is_identified, true);
  t.ok(
    rows.filter((r) => r.distinct_id === 'user-1').every((r) => r.person_id === person!.id),
    'events carry their person',
  );
  const [project] = await db.select().from(projects).where(eq(projects.id, a.project.id));
  t.equal(project!.ingested_event, true);

  t.test('uncompressed, and a wrong token reaches the client as an error', async (t) => {
    const plain = new PostHog(token, {
      host: address,
      flushAt: 1,
      flushInterval: 0,
      disableCompression: true,
      fetchRetryCount: 0,
    });
    plain.capture({ distinctId: 'user-3', event: 'plain' });
    await plain.shutdown();
    t.ok((await storedEvents(db, a.project.id)).some((r) => r.event === 'plain'));
    const wrong = new PostHog('phc_wrong', { host: address, flushAt: 1, flushInterval: 0, fetchRetryCount: 0 });
    const seen: unknown[] = [];
    wrong.on('error', (e) => seen.push(e));
    wrong.capture({ distinctId: 'user-4', event: 'lost' });
    // The client also logs the refusal; the 'error' event is what this test checks.
    const log = console.error;
    console.error = () => {};
    await wrong.shutdown().finally(() => (console.error = log));
    t.equal(seen.length, 1, 'the 401 surfaced as a client error');
    t.notOk((await storedEvents(db, a.project.id)).some((r) => r.event === 'lost'));
  });
});

t.test('every wire format PostHog SDKs use', async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  const batch = (name: string) =>
    JSON.stringify({ api_key: token, batch: [{ event: name, distinct_id: 'd', properties: {} }] });
  const cases: [string, Parameters<typeof send>[1], Parameters<typeof send>[2]][] = [
    ['json', 'capture_batch_create', { body: batch('json'), headers: { 'content-type': 'application/json' } }],
    [
      'gzip header',
      'capture_batch_create',
      {
        body: gzipSync(batch('gzip header')),
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      },
    ],
    [
      'posthog-js text/plain gzip',
      'capture_e_create',
      { body: gzipSync(batch('posthog-js text/plain gzip')), headers: { 'content-type': 'text/plain' } },
    ],
    [
      'gzip-js query',
      'capture_e_create',
      {
        body: gzipSync(batch('gzip-js query')),
        headers: { 'content-type': 'text/plain' },
        query: { compression: 'gzip-js' },
      },
    ],
    [
      'base64 form',
      'capture_e_create',
      {
        body: `data=${encodeURIComponent(Buffer.from(batch('base64 form')).toString('base64'))}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        query: { compression: 'base64' },
      },
    ],
    [
      'form with compression field',
      'capture_create',
      {
        body:
          `data=${encodeURIComponent(Buffer.from(batch('form with compression field')).toString('base64'))}` +
          '&compression=base64',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
    ],
    [
      'bare base64',
      'capture_create',
      { body: Buffer.from(batch('bare base64')).toString('base64'), headers: { 'content-type': 'text/plain' } },
    ],
    [
      'single event',
      'capture_create',
      {
        body: JSON.stringify({ api_key: token, event: 'single event', distinct_id: 'd' }),
        headers: { 'content-type': 'application/json' },
      },
    ],
    [
      'token in properties',
      'capture_i_v0_e_create',
      {
        body: JSON.stringify([{ event: 'token in properties', properties: { token, distinct_id: 'd' } }]),
        headers: { 'content-type': 'application/json' },
      },
    ],
    ['no content type', 'capture_batch_create', { body: batch('no content type') }],
  ];
  for (const [name, op, opts] of cases) {
    const res = await send(ctx, op, opts);
    t.same([name, res.status, res.body], [name, 200, { status: 1 }]);
  }
  const names = (await storedEvents(db, a.project.id)).map((r) => r.event);
  t.same(
    names,
    cases.map(([name]) => name),
    'each request stored its event, in order',
  );
});

t.test('bad requests are refused with a clear body and store nothing', async (t) => {
  const a = await makeTenant(db);
  const token = a.project.api_token;
  const json = { 'content-type': 'application/json' };
  const post = (body: string | Buffer, headers: Record<string, string> = json) =>
    send(ctx, 'capture_batch_create', { body, headers });

  const missingKey = await post(JSON.stringify({ batch: [{ event: 'e', distinct_id: 'd' }] }));
  t.same(
    [missingKey.status, missingKey.body.code, missingKey.body.type],
    [401, 'missing_api_key', 'authentication_error'],
  );
  const badKey = await post(JSON.stringify({ api_key: 'phc_nope', batch: [{ event: 'e', distinct_id: 'd' }] }));
  t.equal(badKey.status, 401);
  t.same(badKey.body, {
    type: 'authentication_error',
    code: 'invalid_api_key',
    detail: 'Project API key invalid. You can find your project API key in PostHog project settings.',
    attr: null,
  });
  const noDistinct = await post(
    JSON.stringify({ api_key: token, batch: [{ event: 'ok', distinct_id: 'd' }, { event: 'e' }] }),
  );
  t.same(noDistinct.body, {
    type: 'validation_error',
    code: 'required',
    detail: 'You need to set user distinct ID field `distinct_id`.',
    attr: 'distinct_id',
  });
  const noEvent = await post(JSON.stringify({ api_key: token, batch: [{ distinct_id: 'd' }] }));
  t.match(noEvent, { status: 400, body: { code: 'required', attr: 'event' } });
  const badUuid = await post(
    JSON.stringify({ api_key: token, batch: [{ event: 'e', distinct_id: 'd', uuid: 'nope' }] }),
  );
  t.match(badUuid, { status: 400, body: { code: 'invalid_payload', attr: 'uuid' } });
  const badProps = await post(
    JSON.stringify({ api_key: token, batch: [{ event: 'e', distinct_id: 'd', properties: [1] }] }),
  );
  t.match(badProps, {
    status: 400,
    body: { attr: 'properties', detail: /Properties must be a JSON object, received list/ },
  });
  const longName = await post(
    JSON.stringify({ api_key: token, batch: [{ event: 'x'.repeat(401), distinct_id: 'd' }] }),
  );
  t.match(longName, { status: 400, body: { attr: 'event' } });

  const malformed = await post('{"api_key": ');
  t.match(malformed, {
    status: 400,
    body: { type: 'validation_error', code: 'invalid_payload', detail: /^Malformed request data/ },
  });
  const badGzip = await post(Buffer.from([0x1f, 0x8b, 1, 2, 3]), { 'content-type': 'text/plain' });
  t.match(badGzip, { status: 400, body: { code: 'invalid_payload', detail: /gzip/ } });
  const empty = await post('', json);
  t.match(empty, { status: 400, body: { code: 'invalid_payload', detail: /No data found/ } });
  const emptyBatch = await post(JSON.stringify({ api_key: token, batch: [] }));
  t.equal(emptyBatch.status, 400);
  const notAList = await post(JSON.stringify({ api_key: token, batch: 'x' }));
  t.match(notAList, { status: 400, body: { code: 'invalid_payload' } });
  const lz = await send(ctx, 'capture_e_create', {
    body: 'data=abc',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    query: { compression: 'lz64' },
  });
  t.match(lz, { status: 400, body: { detail: /lz64/ } });

  const huge = Buffer.alloc(20 * 1024 * 1024 + 10, 0x20);
  const tooLarge = await post(huge, { 'content-type': 'text/plain' });
  t.match(tooLarge, { status: 413, body: { code: 'request_too_large' } });
  const bomb = gzipSync(Buffer.alloc(21 * 1024 * 1024, 0x20));
  t.ok(bomb.length < 1024 * 1024, 'the compressed body itself is small');
  const inflated = await post(bomb, { 'content-type': 'text/plain' });
  t.match(inflated, { status: 413, body: { code: 'request_too_large' } });

  t.same(
    await storedEvents(db, a.project.id),
    [],
    'no refused request stored anything, not even the valid events of a bad batch',
  );
});

t.test("the sender's address, unless the project anonymises addresses", async (t) => {
  const a = await makeTenant(db);
  const body = (name: string, props = {}) =>
    JSON.stringify({ api_key: a.project.api_token, batch: [{ event: name, distinct_id: 'd', properties: props }] });
  const headers = { 'content-type': 'application/json' };
  await send(ctx, 'capture_batch_create', { body: body('seen'), headers });
  await send(ctx, 'capture_batch_create', { body: body('own ip', { $ip: '203.0.113.9' }), headers });
  await db.update(projects).set({ anonymize_ips: true }).where(eq(projects.id, a.project.id));
  await send(ctx, 'capture_batch_create', { body: body('anonymous', { $ip: '203.0.113.9' }), headers });
  const ips = (await storedEvents(db, a.project.id)).map((r) => [r.event, r.properties.$ip]);
  t.same(ips, [
    ['seen', '127.0.0.1'],
    ['own ip', '203.0.113.9'],
    ['anonymous', undefined],
  ]);
});

t.test('retries are idempotent by uuid, and a project only gets its own events', async (t) => {
  const a = await makeTenant(db);
  const other = await makeProject(db, a);
  const uuid = randomUUID();
  const body = JSON.stringify({
    api_key: a.project.api_token,
    batch: [{ event: 'e', distinct_id: 'd', uuid, properties: { $set: { n: 1 } } }],
  });
  for (let i = 0; i < 3; i++)
    t.equal(
      (await send(ctx, 'capture_batch_create', { body, headers: { 'content-type': 'application/json' } })).status,
      200,
    );
  const dup = JSON.stringify({
    api_key: a.project.api_token,
    batch: [
      { event: 'f', distinct_id: 'd', uuid: uuid.toUpperCase() },
      { event: 'g', distinct_id: 'd' },
    ],
  });
  t.equal(
    (await send(ctx, 'capture_batch_create', { body: dup, headers: { 'content-type': 'application/json' } })).status,
    200,
  );
  t.same(
    (await storedEvents(db, a.project.id)).map((r) => r.event),
    ['e', 'g'],
    'a repeated uuid is stored once',
  );
  const same = JSON.stringify({ api_key: other.api_token, batch: [{ event: 'e', distinct_id: 'd', uuid }] });
  t.equal(
    (await send(ctx, 'capture_batch_create', { body: same, headers: { 'content-type': 'application/json' } })).status,
    200,
  );
  t.equal((await storedEvents(db, other.id)).length, 1, 'the same uuid in another project is another event');
  t.equal((await storedEvents(db, a.project.id)).length, 2);
});

t.test('CORS for browsers', async (t) => {
  const a = await makeTenant(db);
  const body = JSON.stringify({ api_key: a.project.api_token, event: 'e', distinct_id: 'd' });
  const res = await send(ctx, 'capture_e_create', {
    body,
    headers: { 'content-type': 'text/plain', origin: 'https://app.example.com' },
  });
  t.equal(res.headers['access-control-allow-origin'], 'https://app.example.com');
  t.equal(res.headers['access-control-allow-credentials'], 'true');
  const refused = await send(ctx, 'capture_e_create', { body: '{}', headers: { origin: 'https://app.example.com' } });
  t.equal(
    refused.headers['access-control-allow-origin'],
    'https://app.example.com',
    'errors are readable cross-origin too',
  );
  const preflight = await ctx.inject({ method: 'OPTIONS', url: '/e/', headers: { origin: 'https://app.example.com' } });
  t.equal(preflight.statusCode, 200);
  t.match(preflight.headers['access-control-allow-methods'], /POST/);
  const api = await ctx.inject({
    method: 'POST',
    url: '/api/organizations/',
    payload: 'x',
    headers: { 'content-type': 'text/plain' },
  });
  t.equal(api.statusCode, 401, 'API routes keep their own parsing and auth');
});
