// The COPY text form record batches travel in, and the literals COPY's queries are written with.
import t from 'tap';
import { inlineParams } from '../../src/batch-exports/copy-source.js';
import { countCopyRows, decodeCopyRows, encodeCopyRows } from '../../src/batch-exports/copy-text.js';
import { adminClient, testServerUrl } from '../helpers/db.js';

t.test('rows round-trip through the escapes, a newline only ever ends a row', async (t) => {
  const values = ['{"a":"plain"}', '{"q":"say \\"hi\\"","path":"C:\\\\x"}', 'tab\there', 'line\nbreak\r\f\b\v', ''];
  const data = encodeCopyRows(values);
  t.equal(countCopyRows(data).rows, values.length);
  t.equal(decodeCopyRows(data).toString('utf8'), values.map((v) => `${v}\n`).join(''));
  t.same(countCopyRows(data, 0, 2), { rows: 2, end: data.indexOf('\n', data.indexOf('\n') + 1) + 1 });
  const clean = Buffer.from('{"a":1}\n');
  t.equal(decodeCopyRows(clean), clean, 'rows without escapes are passed on as they are');
});

t.test('parameters become literals that read back as the same values', async (t) => {
  t.equal(
    inlineParams({ sql: 'select $1, $2, $10, $3', params: [1, "it's", 'a\\b', 4, 5, 6, 7, 8, 9, -2.5] }),
    "select 1, 'it''s', -2.5, E'a\\\\b'",
  );
  t.throws(() => inlineParams({ sql: 'select $1', params: [{}] }));
  t.throws(() => inlineParams({ sql: 'select $1', params: ['nul\0'] }));
});

t.test('a COPY stream that filled its buffer leaves its connection usable', async (t) => {
  const { copyBatches } = await import('../../src/batch-exports/copy-source.js');
  const sql = adminClient(testServerUrl(), 4);
  t.teardown(() => sql.end({ timeout: 5 }));
  // ~40 kB of output in a single batch: more than the stream's buffer, less than a batch, so the
  // stream ends while the driver's socket is paused; the run's commit must still come back.
  const query = `select json_build_object('i', i, 'pad', repeat('x', 300))::text from generate_series(1, 125) as i`;
  const exportAll = async () => {
    let rows = 0;
    for await (const batch of copyBatches(sql, query, 200, 30_000)) rows += batch.count;
    return rows;
  };
  for (let round = 0; round < 5; round++) {
    t.same(await Promise.all([exportAll(), exportAll(), exportAll(), exportAll()]), [125, 125, 125, 125]);
  }
});

t.test('a batch of large rows is cut at 32 MiB whatever the batch size', async (t) => {
  const { copyBatches } = await import('../../src/batch-exports/copy-source.js');
  const sql = adminClient(testServerUrl(), 2);
  t.teardown(() => sql.end({ timeout: 5 }));
  // 40 rows of 1 MiB (and a little) in batches of 100 rows: a batch is ready once it holds 32 MiB.
  const query = `select repeat('x', 1048576) || i from generate_series(1, 40) as i`;
  const counts: number[] = [];
  for await (const batch of copyBatches(sql, query, 100, 30_000)) counts.push(batch.count);
  t.same(counts, [32, 8]);
});
