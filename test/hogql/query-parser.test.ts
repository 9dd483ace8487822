// The Query API's HogQL front end: PostHog's parser, read into the compiler's AST with the grouping,
// the forms PostHog writes, refusals that name what is not supported, and the positions of errors.
import t from 'tap';
import {
  CACHE_ENTRIES,
  MAX_QUERY_LENGTH,
  parseExpression,
  parseOrder,
  parseQuery,
  parsedCount,
  print,
  printQuery,
  QueryError,
} from '../../src/hogql/index.js';

t.test('expressions print back with their grouping', async (t) => {
  const cases: [string, string][] = [
    ['a or b and c', 'a OR (b AND c)'],
    ['(a or b) and c', '(a OR b) AND c'],
    ['not a = 1 and b', '(NOT (a = 1)) AND b'],
    ['1 + 2 * 3 - 4', '(1 + (2 * 3)) - 4'],
    ['-x', '-x'],
    ['- 5', '-5'],
    ['properties.$browser', 'properties.$browser'],
    ["properties['key with space'].inner", 'properties.`key with space`.inner'],
    ["person.properties['$email']", 'person.properties.$email'],
    ['a == b', 'a = b'],
    ['a <> b', 'a != b'],
    ["x not like '%a'", "x NOT LIKE '%a'"],
    ["x not ilike 'a'", "x NOT ILIKE 'a'"],
    ["x =~ 'a.*'", "x =~ 'a.*'"],
    ['x not in (1, 2)', 'x NOT IN (1, 2)'],
    ['x in {list}', 'x IN ({list})'],
    ['x is not null', 'x IS NOT NULL'],
    ['x = null', 'x IS NULL'],
    ['x between 1 and 2', 'x BETWEEN 1 AND 2'],
    ['now() - interval 7 day', 'now() - toIntervalDay(7)'],
    ["case when a then 'x' else 'y' end", "if(a, 'x', 'y')"],
    ['case a when 1 then 2 end', 'CASE WHEN a = 1 THEN 2 END'],
    ['count(distinct distinct_id)', 'count(DISTINCT distinct_id)'],
    ['count(*)', 'count(*)'],
    ["'it''s' || 'a\\'b'", "concat('it\\'s', 'a\\'b')"],
    ['`weird name`', '`weird name`'],
    ['x -- a comment', 'x'],
    ['x /* inline */ + 1', 'x + 1'],
    ['[1, 2][1]', '[1, 2][1]'],
    ['arrayMap(x -> x * 2, [1, 2])', 'arrayMap(x -> x * 2, [1, 2])'],
    ['arrayMap((x, y) -> x + y, a, b)', 'arrayMap((x, y) -> x + y, a, b)'],
    [
      'row_number() over (partition by event order by timestamp desc rows between unbounded preceding and current row)',
      'row_number() OVER (PARTITION BY event ORDER BY timestamp DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)',
    ],
    ['lag(event, 1) over w', 'lag(event, 1) OVER w'],
    ['(select 1)', '(SELECT 1)'],
  ];
  for (const [input, printed] of cases) t.equal(print(await parseExpression(input)), printed, input);
  t.same(print((await parseOrder('timestamp desc')).expr), 'timestamp');
  t.equal((await parseOrder('timestamp desc')).desc, true);
});

t.test('queries', async (t) => {
  t.equal(
    printQuery(
      await parseQuery(
        'select event, count() c from events e left join persons p on e.person_id = p.id where 1 group by event ' +
          'having c > 1 order by c desc limit 5 offset 10;',
      ),
    ),
    'SELECT event, count() AS c FROM events AS e LEFT JOIN persons AS p ON e.person_id = p.id WHERE 1 GROUP BY event ' +
      'HAVING c > 1 ORDER BY c DESC LIMIT 5 OFFSET 10',
  );
  t.equal(
    printQuery(await parseQuery('SELECT * FROM (select event from events) sub, persons')),
    'SELECT * FROM (SELECT event FROM events) AS sub CROSS JOIN persons',
  );
  t.equal(printQuery(await parseQuery('select e.* from events e')), 'SELECT e.* FROM events AS e');
  t.equal(
    printQuery(await parseQuery('with a as (select 1 as x), 2 as y select x, y from a union all select 3, 4')),
    'WITH a AS (SELECT 1 AS x), 2 AS y SELECT x, y FROM a UNION ALL SELECT 3, 4',
  );
  t.equal(
    printQuery(await parseQuery('select sum(x) over w from t window w as (order by x rows 2 preceding)')),
    'SELECT sum(x) OVER w FROM t WINDOW w AS (ORDER BY x ASC ROWS 2 PRECEDING)',
  );
});

t.test('a text is parsed once', async (t) => {
  const text = `select event from events where event = 'cache-${Date.now()}'`;
  const first = await parseQuery(text);
  const count = parsedCount();
  t.equal(await parseQuery(text), first, 'the same AST comes back');
  t.equal(parsedCount(), count, 'nothing new was parsed');
});

t.test('parsed texts are kept in a bounded LRU cache', async (t) => {
  const tag = Date.now();
  const kept = `properties.$browser = 'lru-${tag}'`;
  const first = await parseExpression(kept);
  t.equal(await parseExpression(kept), first, 'an expression asked again is not parsed again');
  // Fill the cache with other texts, touching `kept` on the way: it was used recently, so it stays.
  let oldest: unknown;
  for (let i = 0; i < CACHE_ENTRIES + 10; i++) {
    const ast = await parseExpression(`event = 'lru-${tag}-${i}'`);
    if (i === 0) oldest = ast;
    if (i === CACHE_ENTRIES / 2) t.equal(await parseExpression(kept), first);
  }
  t.ok(parsedCount() <= CACHE_ENTRIES, `at most ${CACHE_ENTRIES} texts kept (${parsedCount()})`);
  t.equal(await parseExpression(kept), first, 'the recently used text was kept');
  const again = await parseExpression(`event = 'lru-${tag}-0'`);
  t.not(again, oldest, 'the least recently used text was dropped, and is parsed again');
  t.same(again, oldest, 'to the same AST');
});

t.test('errors say where, and name what is not supported', async (t) => {
  const cases: [string, RegExp, boolean][] = [
    ['select', /^Syntax error at line 1, column 7: /, true],
    ['select a from', /^Syntax error at line 1, column 14: /, true],
    ['select 1\nfrom events\nwhere #', /^Syntax error at line 3, column 8: /, true],
    ['select a from events limit 1 by a', /^LIMIT BY is not supported/, false],
    ['select a from numbers(10)', /^Table functions are not supported/, false],
    ['select topK(3)(x) from events', /^Parametric functions are not supported/, false],
    ['select a from events join persons using (id)', /^JOIN \.\.\. USING is not supported/, false],
    ['select a from events sample 0.1', /^SAMPLE is not supported/, false],
    ['select a from events settings max_threads = 1', /^SelectStmt.settingsClause\(\) is not supported/, false],
    ['select (1, 2)', /^Tuples \(outside IN\) are not supported/, false],
    [`select ${'('.repeat(30)}1${')'.repeat(30)}`, /^Query is nested too deeply/, false],
    [`select ${'x, '.repeat(MAX_QUERY_LENGTH / 3)}x`, /^Query is too long/, false],
  ];
  for (const [input, message, syntax] of cases) {
    const err = await parseQuery(input).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof QueryError, input.slice(0, 60));
    t.match((err as Error).message, message, input.slice(0, 60));
    t.equal((err as QueryError).code, syntax ? 'hogql_syntax_error' : 'hogql_query_error', input.slice(0, 60));
  }
});
