// The Query API's HogQL grammar: precedence, the forms PostHog writes, and the positions of errors.
import t from 'tap';
import { parseExpression, parseQuery, print, printSelect, QueryError } from '../../src/hogql/query/index.js';

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
    ['x not in (1, 2)', 'x NOT IN (1, 2)'],
    ['x in {list}', 'x IN ({list})'],
    ['x is not null', 'x IS NOT NULL'],
    ['x between 1 and 2', 'x BETWEEN 1 AND 2'],
    ['now() - interval 7 day', 'now() - (INTERVAL 7 DAY)'],
    ['interval 2 hours', 'INTERVAL 2 HOUR'],
    ["case when a then 'x' else 'y' end", "CASE WHEN a THEN 'x' ELSE 'y' END"],
    ['case a when 1 then 2 end', 'CASE WHEN a = 1 THEN 2 END'],
    ['count(distinct distinct_id)', 'count(DISTINCT distinct_id)'],
    ['count(*)', 'count(*)'],
    ["'it''s' || 'a\\'b'", "'it\\'s' || 'a\\'b'"],
    ['`weird name`', '`weird name`'],
    ['x -- a comment', 'x'],
    ['x /* inline */ + 1', 'x + 1'],
  ];
  for (const [input, printed] of cases) t.equal(print(parseExpression(input)), printed, input);
});

t.test('queries', async (t) => {
  t.equal(
    printSelect(
      parseQuery(
        'select event, count() c from events e left join persons p on e.person_id = p.id where 1 group by event ' +
          'having c > 1 order by c desc limit 5, 10;',
      ),
    ),
    'SELECT event, count() AS c FROM events AS e LEFT JOIN persons AS p ON e.person_id = p.id WHERE 1 GROUP BY event ' +
      'HAVING c > 1 ORDER BY c DESC LIMIT 10 OFFSET 5',
  );
  t.equal(
    printSelect(parseQuery('SELECT * FROM (select event from events) sub, persons')),
    'SELECT * FROM (SELECT event FROM events) AS sub CROSS JOIN persons',
  );
  t.equal(printSelect(parseQuery('select e.* from events e')), 'SELECT e.* FROM events AS e');
});

t.test('errors say where', async (t) => {
  const cases: [string, RegExp][] = [
    ['select', /^Syntax error at line 1, column 7: expected an expression, got end of input$/],
    ['select a from', /^Syntax error at line 1, column 14: expected a table name/],
    ["select 'open", /^Syntax error at line 1, column 8: unterminated quote/],
    ['select 1\nfrom events\nwhere #', /^Syntax error at line 3, column 7: unexpected character "#"/],
    ['select a from events limit 1 by a', /^LIMIT BY is not supported/],
    ['select a from events union all select 1', /^UNION is not supported/],
    ['select row_number() over () from events', /^Window functions are not supported/],
    ['select a from numbers(10)', /^Table functions are not supported/],
    ['select quantile(0.5)(x) from events', /^Parametric functions are not supported/],
    ['select (select 1)', /^Subqueries are supported in FROM and IN only/],
    ['select a from events join persons using (id)', /^JOIN \.\.\. USING is not supported/],
  ];
  for (const [input, message] of cases) {
    const err = (() => {
      try {
        parseQuery(input);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    t.ok(err instanceof QueryError, input);
    t.match((err as Error).message, message, input);
  }
  t.throws(() => parseQuery(`select ${'x, '.repeat(10_000)}x`), /Query is too long/);
});
