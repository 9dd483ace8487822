// PostHog's renderers as its viewsets use them: rest_framework_csv's CSV (rows flattened to dotted columns,
// written by Python's csv module) and DRF's content negotiation between JSON and the other renderer. The
// expected texts are written out by hand from those libraries' rules. The routes are tested in the
// dashboards, insights, persons and events tests.
import t from 'tap';
import { renderCsvRows } from '../src/core/csv.js';
import { negotiate } from '../src/http/renderers.js';

t.test('CSV as rest_framework_csv writes it', async (t) => {
  t.equal(
    await renderCsvRows([
      { name: 'a, "b"', n: 1.5, ok: true, off: false, none: null, tags: ['x', 'y'], nested: { deep: { z: 0 } } },
      { name: 'multi\nline', empty: {}, list: [], extra: 'only here' },
    ]),
    'extra,n,name,nested.deep.z,none,off,ok,tags.0,tags.1\r\n' +
      ',1.5,"a, ""b""",0,,False,True,x,y\r\n' +
      'only here,,"multi\nline",,,,,,\r\n',
    'sorted columns of every row; empty objects and lists leave none; None is empty, booleans are Python’s',
  );
  t.equal(await renderCsvRows([]), '', 'no rows: nothing, not even a header');
  t.equal(
    await renderCsvRows([{ only: null }]),
    'only\r\n""\r\n',
    'a line of one empty field is quoted, as Python does',
  );
  t.equal(await renderCsvRows(['plain', 2]), '""\r\nplain\r\n2\r\n', 'scalars are the unnamed column');
  t.equal(await renderCsvRows([[{ a: 1 }, { a: 2 }]]), '0.a,1.a\r\n1,2\r\n', 'a list row opens by index');
});

t.test('a long list is written in turns: other work runs before it is done', async (t) => {
  const rows = Array.from({ length: 50_000 }, (_, i) => ({ id: i, properties: { email: `p${i}@x.io`, n: i } }));
  let servedMeanwhile = false;
  setImmediate(() => (servedMeanwhile = true));
  const text = await renderCsvRows(rows);
  t.ok(servedMeanwhile, 'the event loop served a waiting callback while the rows were written');
  t.equal(text.split('\r\n').length, 50_002, 'every row, after the header');
});

t.test('negotiation as DRF’s, JSON first', async (t) => {
  const cases: [string | undefined, string | undefined, string][] = [
    [undefined, undefined, 'json'],
    ['csv', undefined, 'csv'],
    ['json', 'text/csv', 'json'],
    ['csv', 'application/json', 'csv'],
    [undefined, 'text/csv', 'csv'],
    [undefined, 'text/csv;q=0.9, application/json;q=0.1', 'json'],
    [undefined, 'text/csv, */*', 'csv'],
    [undefined, 'text/*', 'csv'],
    [undefined, 'text/csv; header=present, application/json', 'csv'],
    [undefined, 'text/html,application/xhtml+xml,*/*;q=0.8', 'json'],
    [undefined, 'image/png', 'json'],
  ];
  for (const [format, accept, expected] of cases)
    t.equal(negotiate('paginated-csv', format, accept), expected, `format=${format} Accept: ${accept}`);
  t.equal(negotiate('event-stream', 'txt', undefined), 'txt');
  t.equal(negotiate('event-stream', undefined, 'text/event-stream'), 'txt');
  t.equal(negotiate('event-stream', undefined, 'text/csv'), 'json', 'a type the route does not render');
});
