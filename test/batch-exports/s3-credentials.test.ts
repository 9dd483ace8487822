// An S3 destination saved without keys must not write with the server's own AWS credentials (its
// environment or instance role): those belong to the operator. Its requests go out unsigned.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { startWorker, waitFor } from '../helpers/batch-exports.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

// What the SDK's default chain would pick up: the operator's credentials, in the environment.
process.env.AWS_ACCESS_KEY_ID = 'AKIAOPERATORKEY00000';
process.env.AWS_SECRET_ACCESS_KEY = 'operator-secret';

const seen: { method: string; headers: IncomingHttpHeaders }[] = [];
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    seen.push({ method: req.method ?? '', headers: req.headers });
    res.writeHead(200, { etag: '"0"' }).end();
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const ctx = await buildTestApp(t);
await startWorker(ctx);
const a = await makeTenant(ctx.db);
const HOUR = 3_600_000;
const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR);
await insertEvents(ctx.db, a.project.id, spread(3, start, new Date(start.getTime() + HOUR)));

t.test('an S3 destination without keys sends unsigned requests, never the operator’s credentials', async (t) => {
  const P = { project_id: a.project.id };
  const exp = await ctx.call('projects_batch_exports_create', {
    key: a.key,
    params: P,
    body: {
      name: 'no keys',
      interval: 'hour',
      paused: true,
      destination: { type: 'S3', config: { bucket_name: 'exports', region: 'us-east-1', endpoint_url: endpoint } },
    },
  });
  t.equal(exp.status, 201);
  const E = { ...P, batch_export_id: exp.body.id };
  const backfill = await ctx.call('projects_batch_exports_backfills_create', {
    key: a.key,
    params: E,
    body: { start_at: start.toISOString(), end_at: new Date(start.getTime() + HOUR).toISOString() },
  });
  const done = await waitFor('the backfill to finish', async () => {
    const b = await ctx.call('projects_batch_exports_backfills_retrieve', {
      key: a.key,
      params: { ...E, id: backfill.body.backfill_id },
    });
    return b.body.status !== 'Running' && b.body;
  });
  t.equal(done.status, 'Completed', 'the run wrote its object');
  const puts = seen.filter((r) => r.method === 'PUT');
  t.ok(puts.length > 0, 'the object reached the endpoint');
  for (const r of seen) {
    t.notOk(r.headers.authorization, `${r.method} carries no signature`);
    t.notMatch(JSON.stringify(r.headers), /AKIAOPERATORKEY/, 'nor the operator’s key id');
  }
});
