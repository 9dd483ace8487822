import { print, type Node } from '../../hogql/index.js';
import type { FilterNode } from '../../events/filters.js';
import type { Period } from './date-range.js';
import type { KindHogQL } from './execute-hogql.js';
import { filterHogQL, rangeConditions } from './series-hogql.js';

/** PostHog's `PathType`: which events make the paths. */
export type PathType = '$pageview' | '$screen' | 'custom_event' | 'hogql';
export const PATH_TYPES: readonly PathType[] = ['$pageview', '$screen', 'custom_event', 'hogql'];

export interface Cleaning {
  regex: string;
  /** ClickHouse's replacement (`\0` the whole match). */
  alias: string;
}

export interface PathsPlan {
  period: Period;
  filters?: FilterNode;
  types: PathType[];
  /** `pathsHogQLExpression`, parsed. */
  hogql?: Node;
  excludeEvents: string[];
  cleaning: Cleaning[];
  groupings: string[];
  startPoint?: string;
  endPoint?: string;
  stepLimit: number;
  edgeLimit: number;
  minWeight?: number;
  maxWeight?: number;
}

/** PostHog's session cut: a gap this long (30 minutes, in microseconds) between a person's events starts a path. */
const SESSION_GAP_US = 1_800_000_000;

/**
 * Whether an event type's step name applies: with `includeEventTypes`, the listed types; without, every type
 * not named in `excludeEvents` (PostHog's `_should_query_event`).
 */
const named = (p: PathsPlan, type: string) =>
  p.types.length ? p.types.includes(type as PathType) : !p.excludeEvents.includes(type);

/**
 * An event's step name, over the columns `event`, `url` and `screen`: its name, or the HogQL expression's value
 * (`expr`); a page view's URL without one trailing slash (PostHog's replaceRegexpAll(url, '(.)/$', '\\1'),
 * without a regular expression per event); a screen's name. Kept flat: the parser's time grows with nesting.
 */
function stepName(p: PathsPlan): string {
  const cases: string[] = [];
  if (named(p, '$screen')) cases.push(`event = '$screen', screen`);
  if (named(p, '$pageview')) {
    cases.push(`event = '$pageview' AND length(url) > 1 AND endsWith(url, '/')`, 'substring(url, 1, length(url) - 1)');
    cases.push(`event = '$pageview'`, 'url');
  }
  const otherwise = p.hogql && named(p, 'hogql') ? 'expr' : 'event';
  return `coalesce(${cases.length ? `multiIf(${cases.join(', ')}, ${otherwise})` : otherwise}, '')`;
}

/** The columns stepName reads, from the events table. */
function stepColumns(p: PathsPlan): string {
  const cols = [
    'event',
    `coalesce(toString(properties.$current_url), '') AS url`,
    'toString(properties.$screen_name) AS screen',
  ];
  if (p.hogql && named(p, 'hogql')) cols.push(`toString(${print(p.hogql)}) AS expr`);
  return cols.join(', ');
}

/**
 * A grouping as a regular expression that matches from the start of a step name up to the end of the
 * grouping's first match, as short as it can: `*` is any text, everything else is literal.
 */
const groupingPattern = (grouping: string) =>
  `^.*?${grouping.replace(/[^A-Za-z0-9\u0080-\uffff]/g, (c) => (c === '*' ? '.*?' : `\\${c}`))}`;

/** PostHog's event-type conditions: only with `includeEventTypes`, which also turns on `excludeEvents`. */
function typeConds(p: PathsPlan): string[] {
  if (!p.types.length) return [];
  const any: string[] = [];
  if (p.types.includes('$pageview')) any.push(`event = '$pageview'`);
  if (p.types.includes('$screen')) any.push(`event = '$screen'`);
  if (p.types.includes('custom_event')) any.push(`NOT startsWith(event, '$')`);
  return any.length ? [`(${any.join(' OR ')})`] : [];
}

/** A lone start or end point loses one trailing slash, as page URLs do (PostHog's `target_point`). */
const stripSlash = (point: string) => (point.length > 1 && point.endsWith('/') ? point.slice(0, -1) : point);

const PER_PATH = 'PARTITION BY actor, session';

/**
 * Each path's kept steps (`pos` from 1) out of `steps` (`k` from 1): the first `stepLimit` steps; from the
 * first start point on; up to the first end point, its last `stepLimit`; or from the start point to the
 * first end point after it, its first and last halves around a `...` step when longer than `stepLimit`.
 */
function limited(p: PathsPlan, values: KindHogQL['values']): string {
  values.step_limit = p.stepLimit;
  const n = '{step_limit}';
  if (p.startPoint && p.endPoint) {
    Object.assign(values, { start_point: p.startPoint, end_point: p.endPoint, half: Math.floor(p.stepLimit / 2) });
    return `SELECT actor, session, ts, if(len > ${n} AND j = {half} + 1, '...', item) AS item,
    if(len <= ${n} OR j <= {half} + 1, j, j - len + 2 * {half} + 1) AS pos
  FROM (SELECT actor, session, ts, item, k - si + 1 AS j, ei - si + 1 AS len
    FROM (SELECT actor, session, ts, item, k, si, minIf(k, item = {end_point} AND k >= si) OVER (${PER_PATH}) AS ei
      FROM (SELECT actor, session, ts, item, k, minIf(k, item = {start_point}) OVER (${PER_PATH}) AS si FROM steps)
      WHERE si IS NOT NULL)
    WHERE ei IS NOT NULL AND k >= si AND k <= ei)
  WHERE len <= ${n} OR j <= {half} + 1 OR j > len - {half}`;
  }
  const point = p.endPoint ?? p.startPoint;
  if (!point) return `SELECT actor, session, ts, item, k AS pos FROM steps WHERE k <= ${n}`;
  values.point = stripSlash(point);
  const found = `(SELECT actor, session, ts, item, k, minIf(k, item = {point}) OVER (${PER_PATH}) AS t FROM steps)`;
  if (p.endPoint) {
    return `SELECT actor, session, ts, item, k - if(t > ${n}, t - ${n}, 0) AS pos FROM ${found}
  WHERE t IS NOT NULL AND k <= t AND k > t - ${n}`;
  }
  return `SELECT actor, session, ts, item, k - t + 1 AS pos FROM ${found}
  WHERE t IS NOT NULL AND k >= t AND k < t + ${n}`;
}

/**
 * Cleaning and grouping depend on the name alone: done once per distinct name. A name is cleaned by each
 * rule's replacements in turn, then named by the grouping whose match ends first (the order in which
 * ClickHouse's multiMatchAnyIndex reports them), then the first listed.
 */
function renamed(p: PathsPlan, values: KindHogQL['values']): string {
  let cleaned = 'd.raw';
  p.cleaning.forEach((c, i) => {
    Object.assign(values, { [`re${i}`]: c.regex, [`alias${i}`]: c.alias });
    cleaned = `replaceRegexpAll(${cleaned}, {re${i}}, {alias${i}})`;
  });
  const names = `names AS (SELECT d.raw AS raw, ${cleaned} AS cleaned
  FROM (SELECT DISTINCT item AS raw FROM raw) AS d)`;
  if (!p.groupings.length) return `${names},\nrenamed AS (SELECT raw, cleaned AS item FROM names)`;
  Object.assign(values, {
    groupings: p.groupings,
    patterns: p.groupings.map(groupingPattern),
    indexes: p.groupings.map((_, i) => i + 1),
  });
  return `${names},
matched AS (SELECT raw, i, length(extract(cleaned, {patterns}[i])) AS n
  FROM (SELECT raw, cleaned, arrayJoin({indexes}) AS i FROM names) WHERE match(cleaned, {patterns}[i])),
firsts AS (SELECT raw, i FROM (SELECT raw, i, row_number() OVER (PARTITION BY raw ORDER BY n, i) AS rn FROM matched)
  WHERE rn = 1),
renamed AS (SELECT names.raw AS raw, if(firsts.i IS NULL, names.cleaned, {groupings}[firsts.i]) AS item
  FROM names LEFT JOIN firsts ON firsts.raw = names.raw)`;
}

/**
 * PostHog's PathsQueryRunner as HogQL. The range's events of the project (filtered, named, cleaned, grouped,
 * the excluded left out) are read per person in time order and cut into sessions at every gap of 30 minutes
 * or more; a step repeated in a row counts once (its last time); each session's steps are cut to the start
 * and end points and the step limit; then every link between consecutive steps is counted with its average
 * time in seconds. The most travelled links, and those tying with the last of them, are answered (the
 * caller orders ties by source and target).
 */
export function pathsHogQL(p: PathsPlan): KindHogQL {
  const values: KindHogQL['values'] = {};
  const conds = [...rangeConditions(p.period, values, 'date', p.period.from), ...typeConds(p)];
  if (p.filters) conds.push(filterHogQL(p.filters));
  // Events at the same time follow each other in the order of their uuids.
  const raw = `raw AS (SELECT actor, ts, seq, ${stepName(p)} AS item
  FROM (SELECT person_id AS actor, timestamp AS ts, uuid AS seq, ${stepColumns(p)}
    FROM events WHERE ${conds.join(' AND ')}))`;
  const clean = p.cleaning.length || p.groupings.length;
  const source = clean
    ? `SELECT raw.actor AS actor, raw.ts AS ts, raw.seq AS seq, renamed.item AS item
  FROM raw JOIN renamed ON renamed.raw = raw.item`
    : 'SELECT actor, ts, seq, item FROM raw';
  let excluded = '';
  if (p.types.length && p.excludeEvents.length) {
    values.excluded = p.excludeEvents;
    excluded = ' WHERE item NOT IN {excluded}';
  }
  const having: string[] = [];
  if (p.minWeight) having.push('count() >= {min_weight}');
  if (p.maxWeight) having.push('count() <= {max_weight}');
  if (p.minWeight) values.min_weight = p.minWeight;
  if (p.maxWeight) values.max_weight = p.maxWeight;
  values.edge_limit = p.edgeLimit;
  const micros = (x: string) => `toUnixTimestamp64Micro(${x})`;
  const text = `WITH ${raw},${clean ? `\n${renamed(p, values)},` : ''}
kept AS (SELECT actor, ts, seq, item FROM (${source})${excluded}),
cut AS (SELECT actor, ts, seq, item, if(${micros('ts')} - ${micros('lag(ts) OVER w')} >= ${SESSION_GAP_US}, 1, 0) AS gap
  FROM kept WINDOW w AS (PARTITION BY actor ORDER BY ts, seq)),
sessions AS (SELECT actor, ts, seq, item, sum(gap) OVER (PARTITION BY actor ORDER BY ts, seq
  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session FROM cut),
compact AS (SELECT actor, session, ts, seq, item FROM (SELECT actor, session, ts, seq, item,
    lead(item) OVER (${PER_PATH} ORDER BY ts, seq) AS next FROM sessions)
  WHERE item != coalesce(next, '')),
steps AS (SELECT actor, session, ts, item, row_number() OVER (${PER_PATH} ORDER BY ts, seq) AS k FROM compact),
limited AS (${limited(p, values)}),
links AS (SELECT pos, item, ts, lag(item) OVER w AS prev, lag(ts) OVER w AS prev_ts
  FROM limited WINDOW w AS (${PER_PATH} ORDER BY pos)),
counted AS (SELECT concat(toString(pos - 1), '_', prev) AS source, concat(toString(pos), '_', item) AS target,
    count() AS value, avg((${micros('ts')} - ${micros('prev_ts')}) / 1000000) AS seconds
  FROM links WHERE pos > 1 GROUP BY source, target${having.length ? ` HAVING ${having.join(' AND ')}` : ''}),
top AS (SELECT source, target, value, seconds FROM counted ORDER BY value DESC LIMIT {edge_limit} WITH TIES)
SELECT source, target, value, seconds FROM top`;
  return { text, values };
}
