import { ApiError } from '../../core/errors.js';
import type { FilterNode } from '../../events/filters.js';
import { Timings } from '../timings.js';
import {
  dayOf,
  INTERVALS,
  type Interval,
  isoOf,
  localOf,
  nextBucket,
  previousBucket,
  planRange,
  type RangePlan,
  resolveRange,
  wall,
  wallText,
} from './date-range.js';
import type { Executor } from './execute.js';
import { executeHogQL, type KindHogQL } from './execute-hogql.js';
import { parseProperties, parseSeries, type Series } from './series.js';
import { BUCKET, conditions } from './series-hogql.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** PostHog's statuses, in the order its LifecycleQueryRunner answers them. */
const STATUSES = ['new', 'returning', 'resurrecting', 'dormant'] as const;

export interface PreparedLifecycle {
  kind: 'LifecycleQuery';
  query: Obj;
  series: Series;
  interval: Interval;
  range: RangePlan;
  filters?: FilterNode;
}

export function prepareLifecycle(query: Obj): PreparedLifecycle {
  if (!Array.isArray(query.series)) throw ApiError.required('query__series');
  if (query.series.length !== 1) {
    throw ApiError.validation('query__series', 'A LifecycleQuery takes exactly one series.');
  }
  const interval = (query.interval ?? 'day') as Interval;
  if (!INTERVALS.includes(interval)) throw ApiError.invalidChoice('query__interval', interval);
  return {
    kind: 'LifecycleQuery',
    query,
    series: parseSeries(query.series[0], 0),
    interval,
    range: planRange(isObject(query.dateRange) ? query.dateRange : null, interval),
    filters: parseProperties(query.properties, 'query__properties'),
  };
}

/** PostHog's lifecycle labels: the day, with the time for an hourly interval. */
const labelOf = (local: string, interval: Interval) => {
  const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const day = `${Number(local.slice(8, 10))}-${MONTHS[Number(local.slice(5, 7)) - 1]}-${local.slice(0, 4)}`;
  return interval === 'hour' || interval === 'minute' ? `${day} ${local.slice(11, 16)}` : day;
};

/**
 * A LifecycleQuery as HogQL: each person's active buckets (from one bucket before the range on), marked with
 * the bucket before and after, then a status per active bucket and a dormant one after each active bucket not
 * followed by another, counted per bucket of the range.
 */
function lifecycleHogQL(p: PreparedLifecycle, buckets: string[]): KindHogQL {
  const values: KindHogQL['values'] = { first: buckets[0]!, last: buckets.at(-1)! };
  const before = wallText(previousBucket(wall(buckets[0]!), p.interval));
  const end = wallText(nextBucket(wall(buckets.at(-1)!), p.interval));
  const period = { from: before, to: end, buckets };
  const where = conditions({ series: p.series, filters: p.filters, period }, values, 'date', before, end);
  const bucket = (x: string) => `toDateTime(${BUCKET[p.interval]}(${x}))`;
  const step = `INTERVAL 1 ${p.interval.toUpperCase()}`;
  const text = `WITH marked AS (
  SELECT pid, b, created, lagInFrame(b) OVER (PARTITION BY pid ORDER BY b) AS prev,
    leadInFrame(b) OVER (PARTITION BY pid ORDER BY b) AS next
  FROM (SELECT person.id AS pid, ${bucket('timestamp')} AS b, ${bucket('person.created_at')} AS created
    FROM events WHERE ${where} AND person.id IS NOT NULL GROUP BY pid, b, created))
SELECT b, status, count(DISTINCT pid) AS value FROM (
  SELECT b, multiIf(prev IS NULL AND b = created, 'new', prev IS NOT NULL AND prev = b - ${step}, 'returning',
    'resurrecting') AS status, pid FROM marked
  UNION ALL
  SELECT b + ${step} AS after, 'dormant' AS status, pid FROM marked WHERE next IS NULL OR next != b + ${step})
WHERE b >= toDateTime({first}) AND b <= toDateTime({last})
GROUP BY b, status`;
  return { text, values };
}

/**
 * Runs a LifecycleQuery as PostHog's LifecycleQueryRunner counts it: each person's active periods (from
 * one period before the range), each one `new` when it is the period the person was created in and
 * their first, `returning` when the period before was active too, else `resurrecting`; and `dormant`
 * (counted negative) in the period after each active period not followed by another.
 */
export async function runLifecycle(ex: Executor, teamId: number, p: PreparedLifecycle) {
  const timings = new Timings();
  const range = await timings.measure('date_range', () => resolveRange(ex, teamId, p.range));
  const tz = range.timezone;
  const { buckets } = range.current;
  const { rows, hogql } = await timings.measure('execute', () =>
    executeHogQL<{ b: string; status: string; value: number }>(ex, teamId, tz, lifecycleHogQL(p, buckets)),
  );
  const event = p.series.event;
  const name = event ?? 'All events';
  const results = STATUSES.map((status) => {
    const values = new Map(rows.filter((r) => r.status === status).map((r) => [localOf(r.b), Number(r.value)]));
    const data = buckets.map((b) => (status === 'dormant' ? -1 : 1) * (values.get(b) ?? 0) || 0);
    return {
      action: { id: event, name, type: 'events', order: 0, math: 'total' },
      data,
      count: data.reduce((a, v) => a + v, 0),
      labels: buckets.map((b) => labelOf(b, p.interval)),
      days: buckets.map((b) => dayOf(b, p.interval)),
      label: `${name} - ${status}`,
      status,
    };
  });
  return {
    results,
    hogql,
    resolved_date_range: { date_from: isoOf(range.current.from, tz), date_to: isoOf(range.current.to, tz) },
    timings: timings.list(),
  };
}
