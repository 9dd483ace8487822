// The capture decoders' queue is bounded: bodies past it are refused with a 503 to retry rather
// than held (with their memory) behind the ones being decoded.
import t from 'tap';
import { batchJson, multiMemberGzip } from '../../bench/bomb-payloads.js';
import { configureDecoders, decodeOffThread, DecodersBusy } from '../../src/capture/decode-thread.js';

t.test('bodies past the decoder queue are refused with 503, the others decoded', async (t) => {
  configureDecoders({ threads: 1, queue: 2 });
  t.teardown(() => configureDecoders({ threads: 1, queue: 32 }));
  const body = multiMemberGzip(batchJson('phc_x', 4 * 1024 * 1024));
  const raw = () => ({
    body: Buffer.from(body),
    contentType: 'text/plain',
    contentEncoding: undefined,
    compression: undefined,
  });
  const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => decodeOffThread(raw())));
  const decoded = outcomes.filter((o) => o.status === 'fulfilled');
  const refused = outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason);
  // One decoding and two waiting; the other three are refused at once.
  t.equal(decoded.length, 3, 'one body decoding and two waiting are decoded');
  t.equal(refused.length, 3, 'the rest are refused');
  t.ok(
    refused.every((e) => e instanceof DecodersBusy && e.statusCode === 503 && e.headers['retry-after'] === '1'),
    'with 503 and Retry-After',
  );
  t.same(refused[0].body.code, 'service_unavailable', 'in PostHog error shape');
  const skipped = decodeOffThread(raw(), () => true);
  await t.rejects(skipped, { code: 'client_closed' }, 'a body whose client is gone by its turn is not decoded');
});
