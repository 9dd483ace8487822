import { ApiError } from '../../core/errors.js';
import type { FilterNode } from '../../events/filters.js';
import { print } from '../../hogql/index.js';
import { propertyFilterNode } from '../events-query.js';
import { Timings } from '../timings.js';
import {
  bucketStart,
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
import { parseProperties } from './series.js';
import { BUCKET } from './series-hogql.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const PERIODS: Record<string, Interval> = { Hour: 'hour', Day: 'day', Week: 'week', Month: 'month' };
const TYPES = ['retention_recurring', 'retention_first_time'] as const;
/** PostHog's default number of cohorts (its schema's `totalIntervals`). */
const DEFAULT_INTERVALS = 8;
/** The most cohorts one query may ask for: the answer holds the square of it. */
const MAX_INTERVALS = 200;

interface Entity {
  event: string | null;
  filters?: FilterNode;
}

export interface PreparedRetention {
  kind: 'RetentionQuery';
  query: Obj;
  period: keyof typeof PERIODS;
  interval: Interval;
  type: (typeof TYPES)[number];
  total: number;
  target: Entity;
  returning: Entity;
  range: RangePlan;
  filters?: FilterNode;
}

const F = 'query__retentionFilter';

function parseEntity(raw: unknown, attr: string): Entity {
  if (raw === null || raw === undefined) return { event: '$pageview' };
  if (!isObject(raw)) throw ApiError.validation(attr, 'An entity must be an object with an event id.');
  if (raw.type !== undefined && raw.type !== null && raw.type !== 'events') {
    throw ApiError.validation(`${attr}__type`, `Entity type "${String(raw.type)}" is not supported; use events.`);
  }
  if (raw.id !== null && raw.id !== undefined && typeof raw.id !== 'string') {
    throw ApiError.validation(`${attr}__id`, 'An event entity names its event in id (or null for all events).');
  }
  return {
    event: (raw.id as string | null | undefined) ?? null,
    filters: parseProperties(raw.properties, `${attr}__properties`),
  };
}

/** Only `date_to` places the cohorts (PostHog's QueryDateRangeWithIntervals): read as a one-day range. */
function rangeOf(dateRange: Obj, interval: Interval): RangePlan {
  const to = typeof dateRange.date_to === 'string' ? dateRange.date_to : null;
  try {
    return planRange({ ...dateRange, date_from: to ?? '-0d', date_to: to }, interval === 'hour' ? 'hour' : 'day');
  } catch (err) {
    if (err instanceof ApiError) throw ApiError.validation('query__dateRange__date_to', err.detail);
    throw err;
  }
}

/** Checks a RetentionQuery as PostHog's RetentionQueryRunner would: every refusal a 400 naming its field. */
export function prepareRetention(query: Obj): PreparedRetention {
  if (!isObject(query.retentionFilter)) throw ApiError.required(F);
  const f = query.retentionFilter;
  const period = (f.period ?? 'Day') as string;
  if (!PERIODS[period]) throw ApiError.invalidChoice(`${F}__period`, period);
  const type = (f.retentionType ?? 'retention_recurring') as PreparedRetention['type'];
  if (!TYPES.includes(type)) {
    throw ApiError.validation(
      `${F}__retentionType`,
      `Retention type "${String(type)}" is not supported; supported: ${TYPES.join(', ')}.`,
      'invalid_choice',
    );
  }
  const total = f.totalIntervals ?? DEFAULT_INTERVALS;
  if (typeof total !== 'number' || !Number.isInteger(total) || total < 1 || total > MAX_INTERVALS) {
    throw ApiError.validation(
      `${F}__totalIntervals`,
      `totalIntervals must be a whole number from 1 to ${MAX_INTERVALS}.`,
    );
  }
  const breakdown = isObject(query.breakdownFilter) ? query.breakdownFilter : {};
  if (breakdown.breakdown || (Array.isArray(breakdown.breakdowns) && breakdown.breakdowns.length)) {
    throw ApiError.validation('query__breakdownFilter', 'Breakdowns of retention are not supported.');
  }
  const interval = PERIODS[period]!;
  return {
    kind: 'RetentionQuery',
    query,
    period: period as PreparedRetention['period'],
    interval,
    type,
    total,
    target: parseEntity(f.targetEntity, `${F}__targetEntity`),
    returning: parseEntity(f.returningEntity, `${F}__returningEntity`),
    // Only `date_to` places the cohorts: they are the `totalIntervals` periods ending with its own.
    range: rangeOf(isObject(query.dateRange) ? query.dateRange : {}, interval),
    filters: parseProperties(query.properties, 'query__properties'),
  };
}

/** An entity's conditions (its event and property filters), its values named with `name`. */
function match(e: Entity, name: string, values: KindHogQL['values']): string {
  const parts: string[] = [];
  if (e.event !== null) {
    values[name] = e.event;
    parts.push(`event = {${name}}`);
  }
  if (e.filters) parts.push(`(${print(propertyFilterNode(e.filters))})`);
  return parts.length ? parts.join(' AND ') : 'true';
}

/** The cohorts: `total` period starts (local), the last one holding `date_to`. */
function cohortsOf(to: string, interval: Interval, total: number): string[] {
  const out = [bucketStart(wall(to), interval)];
  while (out.length < total) out.unshift(previousBucket(out[0]!, interval));
  return out.map(wallText);
}

/**
 * Per cohort and later period, the persons (as ingestion merged them) of the cohort who did the returning
 * event in that period, as HogQL. Recurring: a cohort is everyone who did the target event in its period;
 * first time: everyone whose first target event ever (not only in the range) falls in it.
 */
function retentionHogQL(p: PreparedRetention, first: string, end: string): KindHogQL {
  const values: KindHogQL['values'] = { first, end };
  const b = (x: string) => `toDateTime(${BUCKET[p.interval]}(${x}))`;
  const common = p.filters ? ` AND (${print(propertyFilterNode(p.filters))})` : '';
  const inRange = 'timestamp >= toDateTime({first}) AND timestamp < toDateTime({end})';
  const target = match(p.target, 'target', values);
  const cohorts =
    p.type === 'retention_first_time'
      ? `SELECT actor, ${b('ft')} AS b FROM (
    SELECT person_id AS actor, min(timestamp) AS ft FROM events WHERE ${target}${common} GROUP BY actor)
  WHERE ft >= toDateTime({first}) AND ft < toDateTime({end})`
      : `SELECT DISTINCT person_id AS actor, ${b('timestamp')} AS b FROM events
    WHERE ${target}${common} AND ${inRange}`;
  const returning = match(p.returning, 'returning', values);
  const text = `WITH cohort AS (${cohorts}),
  back AS (SELECT DISTINCT person_id AS actor, ${b('timestamp')} AS b FROM events
    WHERE ${returning}${common} AND ${inRange})
SELECT cb, rb, n FROM (
  SELECT c.b AS cb, c.b AS rb, count() AS n FROM cohort AS c GROUP BY c.b
  UNION ALL
  SELECT c.b AS cb, r.b AS rb, count() AS n FROM cohort AS c INNER JOIN back AS r ON r.actor = c.actor AND r.b > c.b
  GROUP BY c.b, r.b)`;
  return { text, values };
}

/** Runs a prepared RetentionQuery and answers PostHog's cohorts (`date`, `label`, `values` of `count`s). */
export async function runRetention(ex: Executor, teamId: number, p: PreparedRetention) {
  const timings = new Timings();
  const range = await timings.measure('date_range', () => resolveRange(ex, teamId, p.range));
  const tz = range.timezone;
  const cohorts = cohortsOf(range.current.to, p.interval, p.total);
  const end = wallText(nextBucket(wall(cohorts.at(-1)!), p.interval));
  const { rows, hogql } = await timings.measure('execute', () =>
    executeHogQL<{ cb: string; rb: string; n: number }>(ex, teamId, tz, retentionHogQL(p, cohorts[0]!, end)),
  );
  const index = new Map(cohorts.map((c, i) => [c, i]));
  const counts = new Map(rows.map((r) => [`${index.get(localOf(r.cb))}:${index.get(localOf(r.rb))}`, Number(r.n)]));
  const name = p.period;
  const results = cohorts.map((c, i) => ({
    values: cohorts.map((_, j) => ({ count: counts.get(`${i}:${i + j}`) ?? 0, label: `${name} ${j}` })),
    label: `${name} ${i}`,
    date: isoOf(c, tz),
  }));
  return {
    results,
    hogql,
    resolved_date_range: { date_from: isoOf(cohorts[0]!, tz), date_to: isoOf(end, tz) },
    timings: timings.list(),
  };
}
