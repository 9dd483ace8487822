// An S3 server that starts a multipart upload and then refuses its parts: nothing reads the export's
// body any more, so a write waiting for it to drain must be woken by the refusal, and the run fail at
// once with S3's reason rather than wait out its step deadline.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { encodeCopyRows } from '../../src/batch-exports/copy-text.js';
import { s3Writer } from '../../src/batch-exports/destinations/s3.js';
import type { DestinationContext } from '../../src/batch-exports/destinations/types.js';
import { insertRuns } from '../../src/batch-exports/run-queries.js';
import { tenantNetwork } from '../../src/net/index.js';
import { buildTestApp } from '../helpers/app.js';
import { attemptRun } from '../helpers/batch-exports.js';
import { insertEvents, spread } from '../helpers/event-rows.js';
import { makeTenant } from '../helpers/factories.js';

const requests: string[] = [];
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://s3');
    requests.push(
      `${req.method} ${url.searchParams.has('uploads') ? 'uploads' : url.searchParams.has('partNumber') ? 'part' : ''}`,
    );
    if (req.method === 'POST' && url.searchParams.has('uploads')) {
      res
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(
          '<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>exports</Bucket>' +
            '<Key>k</Key><UploadId>upload-1</UploadId></InitiateMultipartUploadResult>',
        );
    } else if (req.method === 'DELETE') {
      res.writeHead(204).end();
    } else {
      res
        .writeHead(403, { 'content-type': 'application/xml' })
        .end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>No.</Message></Error>');
    }
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const ctx = await buildTestApp(t);
const { call, db } = ctx;

t.test('parts refused after the upload started fail the run at once', async (t) => {
  const a = await makeTenant(db);
  const HOUR = 3_600_000;
  const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR);
  const end = new Date(start.getTime() + HOUR);
  // About 13 MB of JSON lines, uncompressed: more than the first 5 MiB part and the streams' buffers.
  const filler = 'x'.repeat(32 * 1024);
  await insertEvents(
    db,
    a.project.id,
    spread(400, start, end, (i) => ({ properties: { filler, n: i } })),
  );
  const exp = await call('projects_batch_exports_create', {
    key: a.key,
    params: { project_id: a.project.id },
    body: {
      name: 'refused',
      destination: {
        type: 'S3',
        config: {
          bucket_name: 'exports',
          region: 'us-east-1',
          prefix: 'p',
          endpoint_url: endpoint,
          aws_access_key_id: 'AKIATEST',
          aws_secret_access_key: 'secret',
        },
      },
      interval: 'hour',
      paused: true,
    },
  });
  t.equal(exp.status, 201);
  const [run] = await insertRuns(db, { project_id: a.project.id }, exp.body.id, [{ start, end }]);
  const began = Date.now();
  // A step may take 60 s: a run that waited for the body to drain would take that long.
  const outcome = await attemptRun(db, ctx.app.config, run!.id, { batchSize: 20, stepSeconds: 60 });
  const took = Date.now() - began;
  t.equal(outcome, 'failed');
  t.ok(took < 30_000, `the run ended ${took} ms after it started`);
  t.ok(requests.includes('PUT part'), 'a part was sent and refused');
  const got = await call('projects_batch_exports_runs_retrieve', {
    key: a.key,
    params: { project_id: a.project.id, batch_export_id: exp.body.id, id: run!.id },
  });
  t.match(got.body, { status: 'Failed', latest_error: 'S3 refused the upload: AccessDenied' });
});

t.test('parts refused while no write waits: the run fails, the process lives', async (t) => {
  const writer = s3Writer({
    exp: {
      destination_config: {
        bucket_name: 'exports',
        region: 'us-east-1',
        prefix: 'p',
        endpoint_url: endpoint,
        aws_access_key_id: 'AKIATEST',
        aws_secret_access_key: 'secret',
      },
    },
    run: { data_interval_start: null, data_interval_end: new Date() },
    network: tenantNetwork(['127.0.0.0/8'], undefined),
  } as unknown as DestinationContext);
  // 12 MB: the upload starts its first parts; then nothing is written while S3 refuses it. The refusal
  // ends the body with an error, which once nothing listened for it ended the process.
  const line = JSON.stringify({ filler: 'x'.repeat(1000) });
  await writer.write({ count: 12000, data: encodeCopyRows(Array.from({ length: 12000 }, () => line)) });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  await t.rejects(writer.finish(), { message: 'S3 refused the upload: AccessDenied' });
});
