import { ApiError } from '../../core/errors.js';
import type { FilterNode } from '../../events/filters.js';
import { Timings } from '../timings.js';
import { INTERVALS, type Interval, isoOf, type Period, planRange, type RangePlan, resolveRange } from './date-range.js';
import type { Executor } from './execute.js';
import { executeHogQL, type KindHogQL } from './execute-hogql.js';
import { parseProperties, parseSeries, type Series } from './series.js';
import { BUCKET, conditions } from './series-hogql.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const OPERATORS: Record<string, string> = { gte: '>=', lte: '<=', exact: '=' };

export interface PreparedStickiness {
  kind: 'StickinessQuery';
  query: Obj;
  series: Series[];
  interval: Interval;
  range: RangePlan;
  filters?: FilterNode;
  cumulative: boolean;
  criteria?: { operator: string; value: number };
}

export function prepareStickiness(query: Obj): PreparedStickiness {
  if (!Array.isArray(query.series)) throw ApiError.required('query__series');
  if (!query.series.length) throw ApiError.validation('query__series', 'A StickinessQuery needs at least one series.');
  const interval = (query.interval ?? 'day') as Interval;
  if (!INTERVALS.includes(interval)) throw ApiError.invalidChoice('query__interval', interval);
  if (query.intervalCount !== undefined && query.intervalCount !== null && query.intervalCount !== 1) {
    throw ApiError.validation('query__intervalCount', 'Only an intervalCount of 1 is supported.');
  }
  const filter = isObject(query.stickinessFilter) ? query.stickinessFilter : {};
  const computedAs = filter.computedAs ?? 'non_cumulative';
  if (computedAs !== 'non_cumulative' && computedAs !== 'cumulative') {
    throw ApiError.invalidChoice('query__stickinessFilter__computedAs', computedAs);
  }
  let criteria: PreparedStickiness['criteria'];
  if (isObject(filter.stickinessCriteria)) {
    const { operator, value } = filter.stickinessCriteria;
    if (typeof operator !== 'string' || !OPERATORS[operator]) {
      throw ApiError.invalidChoice('query__stickinessFilter__stickinessCriteria__operator', operator);
    }
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      throw ApiError.validation('query__stickinessFilter__stickinessCriteria__value', 'A whole number is required.');
    }
    criteria = { operator, value };
  }
  const compare = isObject(query.compareFilter) ? query.compareFilter : null;
  return {
    kind: 'StickinessQuery',
    query,
    series: query.series.map((s, i) => parseSeries(s, i)),
    interval,
    range: planRange(
      isObject(query.dateRange) ? query.dateRange : null,
      interval,
      compare as { compare?: boolean; compare_to?: string } | null,
    ),
    filters: parseProperties(query.properties, 'query__properties'),
    cumulative: computedAs === 'cumulative',
    criteria,
  };
}

/**
 * How many persons were active in exactly k of the range's intervals, for k from 1 to the number of
 * intervals (PostHog's StickinessQueryRunner), as HogQL; an interval counts when the person's events in it
 * meet `stickinessCriteria` (at least one by default).
 */
function stickinessHogQL(p: PreparedStickiness, series: Series, period: Period): KindHogQL {
  const values: KindHogQL['values'] = {};
  const where = conditions({ series, filters: p.filters, period }, values, 'date', period.buckets[0]!);
  let having = '';
  if (p.criteria) {
    values.criteria = p.criteria.value;
    having = ` HAVING count() ${OPERATORS[p.criteria.operator]} {criteria}`;
  }
  const text = `SELECT n, count() AS value FROM (
  SELECT actor, count() AS n FROM (
    SELECT person_id AS actor, ${BUCKET[p.interval]}(timestamp) AS b FROM events WHERE ${where}
    GROUP BY actor, b${having})
  GROUP BY actor)
GROUP BY n`;
  return { text, values };
}

export async function runStickiness(ex: Executor, teamId: number, p: PreparedStickiness) {
  const timings = new Timings();
  const range = await timings.measure('date_range', () => resolveRange(ex, teamId, p.range));
  const tz = range.timezone;
  const periods: { period: Period; label?: 'current' | 'previous' }[] = range.previous
    ? [
        { period: range.current, label: 'current' },
        { period: range.previous, label: 'previous' },
      ]
    : [{ period: range.current }];
  const ran = await timings.measure('execute', () =>
    Promise.all(
      periods.flatMap(({ period }) =>
        p.series.map((s) => executeHogQL<{ n: number; value: number }>(ex, teamId, tz, stickinessHogQL(p, s, period))),
      ),
    ),
  );
  const answers = ran.map((r) => r.rows);
  const unit = p.interval;
  const results = periods.flatMap(({ period, label }, pi) =>
    p.series.map((s, si) => {
      const rows = answers[pi * p.series.length + si]!;
      const days = period.buckets.map((_, i) => i + 1);
      const counts = new Map(rows.map((r) => [Number(r.n), Number(r.value)]));
      let data = days.map((k) => counts.get(k) ?? 0);
      const count = data.reduce((a, v) => a + v, 0);
      if (p.cumulative) data = data.map((_, i) => data.slice(i).reduce((a, v) => a + v, 0));
      const name = s.event ?? 'All events';
      return {
        count,
        data,
        days,
        label: name,
        labels: days.map((k) => `${k} ${unit}${k === 1 ? '' : 's'}${p.cumulative ? ' or more' : ''}`),
        action: { order: si, type: 'events', name, id: s.event },
        ...(label ? { compare: true, compare_label: label } : {}),
      };
    }),
  );
  return {
    results,
    hogql: ran.map((r) => r.hogql).join('\nUNION ALL\n'),
    resolved_date_range: { date_from: isoOf(range.current.from, tz), date_to: isoOf(range.current.to, tz) },
    timings: timings.list(),
  };
}
