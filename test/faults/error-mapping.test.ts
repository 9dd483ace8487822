// How failures are answered and logged: a busy database or a contended write is a 503 with
// Retry-After (never a 500), and a logged or recorded error keeps its message and its cause.
import t from 'tap';
import { describeError } from '../../src/batch-exports/deadline.js';
import { IngestContended } from '../../src/capture/ingest.js';
import { toApiError } from '../../src/http/errors.js';
import { serializeError } from '../../src/http/logging.js';

/** As drizzle wraps a driver error: its own message with the query, the driver's error as the cause. */
const drizzleError = (cause: object) =>
  Object.assign(new Error('Failed query: select 1\nparams: '), {
    cause: Object.assign(new Error((cause as { message: string }).message), cause),
  });

t.test('server busy states and contended writes are 503 with Retry-After', async (t) => {
  for (const code of ['53300', '53200', '40001', '40P01', '55P03']) {
    const err = toApiError(drizzleError({ message: 'busy', code }));
    t.equal(err?.statusCode, 503, `${code} is a 503`);
    t.equal(err?.headers['retry-after'], '1', `${code} carries Retry-After`);
    t.equal(err?.code, 'service_unavailable');
  }
  const contended = toApiError(new IngestContended(new Error('A concurrent request merged persons of this batch')));
  t.equal(contended?.statusCode, 503, 'ingestion that kept losing to concurrent merges is a 503');
  t.ok(contended?.headers['retry-after']);
  const down = toApiError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }));
  t.equal(down?.statusCode, 503);
  t.equal(down?.headers['retry-after'], '1', 'an unreachable database carries Retry-After too');
  t.equal(toApiError(drizzleError({ message: 'syntax', code: '42601' })), undefined, 'a bug is still a 500');
});

t.test('errors keep their message and cause in logs and run records', async (t) => {
  const err = drizzleError({ message: 'terminating connection due to administrator command', code: '57P01' });
  t.equal(
    describeError(err),
    'terminating connection due to administrator command (SQLSTATE 57P01)',
    'the cause, not the query',
  );
  const logged = serializeError(err);
  t.equal(logged.cause?.message, 'terminating connection due to administrator command');
  t.equal(logged.cause?.code, '57P01');
  t.equal(
    serializeError({ message: undefined, queue: 'q', reason: 'lost' }).message,
    '{"queue":"q","reason":"lost"}',
    'a plain object is not "[object Object]"',
  );
  t.equal(
    serializeError(new IngestContended(new Error('merged'))).cause?.message,
    'merged',
    'a contended write logs its reason',
  );
});
