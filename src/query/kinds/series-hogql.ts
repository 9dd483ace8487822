import { print, type Node } from '../../hogql/index.js';
import { propertyFilterNode } from '../events-query.js';
import type { FilterNode } from '../../events/filters.js';
import { type Interval, wall, wallText } from './date-range.js';
import { BREAKDOWN_NULL, BREAKDOWN_OTHER, type SeriesQuery } from './series.js';
import type { KindHogQL } from './execute-hogql.js';

/** Maths whose value over several buckets is a function of the buckets' values (and which function). */
const MERGEABLE: Record<string, string> = { total: 'sum', sum: 'sum', min: 'min', max: 'max' };
const QUANTILE: Record<string, number> = { median: 0.5, p90: 0.9, p95: 0.95, p99: 0.99 };
export const BUCKET: Record<Interval, string> = {
  minute: 'toStartOfMinute',
  hour: 'toStartOfHour',
  day: 'toStartOfDay',
  week: 'toStartOfWeek',
  month: 'toStartOfMonth',
};
const UNIT: Record<Interval, string> = { minute: 'MINUTE', hour: 'HOUR', day: 'DAY', week: 'WEEK', month: 'MONTH' };

export const fieldOf = (...chain: string[]) => print({ k: 'field', chain, pos: 0 });

/** Active-user windows: the days of activity a bucket's count looks back over, ending with the bucket. */
function windowDays(math: string, interval: Interval): number | undefined {
  // Over weeks or months a 7- or 30-day window is no wider than a bucket: PostHog counts them as DAU.
  if (math === 'weekly_active' && (interval === 'minute' || interval === 'hour' || interval === 'day')) return 7;
  if (math === 'monthly_active' && interval !== 'month') return 30;
  return undefined;
}

/** The aggregate of a series' math over the events in scope, in HogQL. */
function aggregateOf(q: SeriesQuery): string {
  const { math, mathProperty } = q.series;
  const value = mathProperty ? `toFloat(${fieldOf('properties', mathProperty)})` : '';
  switch (math) {
    case 'total':
      return 'count()';
    case 'dau':
    case 'weekly_active':
    case 'monthly_active':
      return 'count(DISTINCT person_id)';
    case 'unique_session':
      return `count(DISTINCT nullIf(${fieldOf('properties', '$session_id')}, ''))`;
    case 'sum':
    case 'avg':
    case 'min':
    case 'max':
      return `coalesce(${math}(${value}), 0)`;
    default:
      return `coalesce(quantile(${QUANTILE[math]})(${value}), 0)`;
  }
}

/**
 * A time range on events from `{<name>_from}` to `{date_to}`: the period's end (inclusive; `<` the next second
 * when it is a whole unit's last microsecond), or before `until`.
 */
export function rangeConditions(
  period: SeriesQuery['period'],
  values: KindHogQL['values'],
  name: string,
  from: string,
  until?: string,
): string[] {
  values[`${name}_from`] = from.slice(0, 23);
  const { to } = period;
  const whole = until !== undefined || to.endsWith('.999999');
  values.date_to = until ?? (whole ? wallText(new Date(wall(to).getTime() + 1000)) : to.slice(0, 23));
  return [`timestamp >= toDateTime({${name}_from})`, `timestamp ${whole ? '<' : '<='} toDateTime({date_to})`];
}

/** A series' conditions on events: its event, the query's and its own property filters, and the time range. */
export function conditions(
  q: Pick<SeriesQuery, 'series' | 'filters' | 'period'>,
  values: KindHogQL['values'],
  name: string,
  from: string,
  until?: string,
): string {
  const conds = rangeConditions(q.period, values, name, from, until);
  if (q.series.event !== null) {
    values.event = q.series.event;
    conds.push('event = {event}');
  }
  for (const f of [q.filters, q.series.filters]) if (f) conds.push(filterHogQL(f));
  return conds.join(' AND ');
}

/** Property filters as a HogQL condition. */
export const filterHogQL = (f: FilterNode) => `(${print(propertyFilterNode(f) as Node)})`;

/** Local wall-clock arithmetic in days, as the range's own texts are (see date-range.ts). */
const daysBefore = (local: string, days: number) =>
  `${wallText(new Date(wall(local).getTime() - days * 86_400_000))}${local.slice(19)}`;

/** Each breakdown value (`bv`) of the range and its rank (`rn`) by the series' math over the range, largest first. */
const rankOf = (bv: string, agg: string, where: string) =>
  `(SELECT bv, row_number() OVER (ORDER BY v DESC, bv ASC) AS rn
  FROM (SELECT ${bv} AS bv, ${agg} AS v FROM events WHERE ${where} GROUP BY bv)) AS r`;

/**
 * One series of a TrendsQuery over one period as HogQL, for the one compiler: rows of the local bucket start
 * (`b`, absent for a total), the breakdown value (`breakdown_value`) and the number (`value`). Counted per
 * bucket (or over the whole range for a total; once per person, in their first bucket, for a cumulative DAU)
 * and per breakdown value; values past the breakdown limit (ranked by the same math over the range) count
 * together as PostHog's "other". Weekly and monthly active users count each bucket's trailing 7 or 30 days.
 */
export function seriesHogQL(q: SeriesQuery): KindHogQL {
  const values: KindHogQL['values'] = {};
  return { text: seriesText(q, values), values };
}

function seriesText(q: SeriesQuery, values: KindHogQL['values']): string {
  const { series, breakdown, interval, period } = q;
  const total = q.shape === 'total';
  const window = total ? windowDays(series.math, 'day') : windowDays(series.math, interval);
  const agg = aggregateOf(q);
  const bucket = `${BUCKET[interval]}(timestamp)`;
  const inRange = conditions(q, values, 'date', period.from);
  const person = breakdown?.type === 'person' ? ['person'] : [];
  const bv = breakdown
    ? `coalesce(nullIf(toString(${fieldOf(...person, 'properties', breakdown.property)}), ''), {null_label})`
    : '';
  if (breakdown) Object.assign(values, { null_label: BREAKDOWN_NULL, other: BREAKDOWN_OTHER, limit: breakdown.limit });
  const limit = '{limit}';
  const other = '{other}';
  const merge = MERGEABLE[series.math];

  if (total && window) {
    // Active users of a total: those of the range's last 7 or 30 days.
    values.recent_from = daysBefore(period.to, window).slice(0, 23);
    const recent = `${inRange} AND timestamp > toDateTime({recent_from})`;
    if (!breakdown) return `SELECT ${agg} AS value FROM events WHERE ${recent}`;
    return `SELECT if(r.rn <= ${limit}, ${bv}, ${other}) AS breakdown_value, ${agg} AS value
FROM events INNER JOIN ${rankOf(bv, agg, inRange)} ON r.bv = ${bv}
WHERE ${recent} GROUP BY breakdown_value`;
  }
  const key = total ? '' : 'b, ';
  const by = total ? '' : `${bucket} AS b, `;
  if (!breakdown) {
    if (window) return windowed(q, values, window, agg, '', '');
    if (q.shape === 'cumulative' && series.math === 'dau') {
      return `SELECT b, count() AS value FROM (SELECT person_id, min(${bucket}) AS b FROM events WHERE ${inRange}
  GROUP BY person_id) GROUP BY b`;
    }
    return `SELECT ${by}${agg} AS value FROM events WHERE ${inRange}${total ? '' : ' GROUP BY b'}`;
  }
  if (merge && !window) {
    // A count, sum, min or max of a group is the same function of its buckets' values: grouped once, the values
    // are ranked by their merged total and those past the limit folded into "other", in one pass over events.
    return `SELECT ${key}if(rn <= ${limit}, bv, ${other}) AS breakdown_value, ${merge}(v) AS value
FROM (SELECT ${key}bv, v, dense_rank() OVER (ORDER BY bv_total DESC, bv ASC) AS rn
  FROM (SELECT ${key}bv, v, ${merge}(v) OVER (PARTITION BY bv) AS bv_total
    FROM (SELECT ${by}${bv} AS bv, ${agg} AS v FROM events WHERE ${inRange} GROUP BY ${key}bv)))
GROUP BY ${key}breakdown_value`;
  }
  const ranked = `INNER JOIN ${rankOf(bv, agg, inRange)} ON r.bv = ${bv}`;
  const folded = `if(r.rn <= ${limit}, ${bv}, ${other})`;
  if (window) return windowed(q, values, window, agg, ranked, folded);
  if (q.shape === 'cumulative' && series.math === 'dau') {
    return `SELECT b, breakdown_value, count() AS value
FROM (SELECT person_id, ${folded} AS breakdown_value, min(${bucket}) AS b FROM events ${ranked}
  WHERE ${inRange} GROUP BY person_id, breakdown_value)
GROUP BY b, breakdown_value`;
  }
  return `SELECT ${by}${folded} AS breakdown_value, ${agg} AS value FROM events ${ranked}
WHERE ${inRange} GROUP BY ${key}breakdown_value`;
}

/**
 * Weekly or monthly active users per bucket: each bucket (a list of the period's bucket starts) joined with the
 * events of its trailing window; the events read from the window before the first bucket on.
 */
function windowed(
  q: SeriesQuery,
  values: KindHogQL['values'],
  days: number,
  agg: string,
  ranked: string,
  folded: string,
): string {
  const { period, interval } = q;
  values.buckets = period.buckets;
  const inWindows = conditions(q, values, 'window', daysBefore(period.from, days));
  const step = `INTERVAL 1 ${UNIT[interval]}`;
  const by = folded ? `, ${folded} AS breakdown_value` : '';
  return `SELECT d.b AS b${by}, ${agg} AS value
FROM (SELECT arrayJoin(arrayMap(x -> toDateTime(x), {buckets})) AS b) AS d
INNER JOIN events ON timestamp >= d.b + ${step} - INTERVAL ${days} DAY AND timestamp < d.b + ${step}
${ranked}
WHERE ${inWindows} GROUP BY b${folded ? ', breakdown_value' : ''}`;
}
