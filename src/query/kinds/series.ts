import { sql, type SQL } from 'drizzle-orm';
import { ApiError } from '../../core/errors.js';
import { filterSql } from '../../events/queries.js';
import { needsPersons, parseFilterList, type FilterNode } from '../../events/filters.js';
import { bucketSql, type Interval, LOCAL_FORMAT, type Period } from './date-range.js';

/** PostHog's labels for a missing breakdown value and for the values past the limit. */
export const BREAKDOWN_NULL = '$$_posthog_breakdown_null_$$';
export const BREAKDOWN_OTHER = '$$_posthog_breakdown_other_$$';
/** PostHog's default `breakdown_limit`. */
export const BREAKDOWN_LIMIT = 25;

const COUNTING = ['total', 'dau', 'weekly_active', 'monthly_active', 'unique_session'] as const;
const PROPERTY = ['sum', 'avg', 'min', 'max', 'median', 'p90', 'p95', 'p99'] as const;
export type Math = (typeof COUNTING)[number] | (typeof PROPERTY)[number];
const QUANTILE: Record<string, number> = { median: 0.5, p90: 0.9, p95: 0.95, p99: 0.99 };

/** An `EventsNode` of a request, checked. */
export interface Series {
  event: string | null;
  math: Math;
  mathProperty: string | null;
  filters?: FilterNode;
  raw: Record<string, unknown>;
}

export interface Breakdown {
  property: string;
  type: 'event' | 'person';
  limit: number;
  hideOther: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Property filters given as a list or as PostHog's group object (`{type: AND, values: [...]}`). */
export function parseProperties(raw: unknown, attr: string): FilterNode | undefined {
  if (raw === null || raw === undefined) return undefined;
  return parseFilterList(isObject(raw) ? [raw] : raw, attr);
}

/** Checks one series of a request (`query__series__<i>__...` in errors). */
export function parseSeries(raw: unknown, i: number): Series {
  const attr = `query__series__${i}`;
  if (!isObject(raw)) throw ApiError.validation(attr, 'Each series must be an object.');
  if (raw.kind !== 'EventsNode') {
    throw ApiError.validation(`${attr}__kind`, `Series kind "${String(raw.kind)}" is not supported; use EventsNode.`);
  }
  const math = (raw.math ?? 'total') as string;
  if (!(COUNTING as readonly string[]).includes(math) && !(PROPERTY as readonly string[]).includes(math)) {
    throw ApiError.validation(
      `${attr}__math`,
      `Math "${math}" is not supported; supported: ${[...COUNTING, ...PROPERTY].join(', ')}.`,
      'invalid_choice',
    );
  }
  const mathProperty = typeof raw.math_property === 'string' && raw.math_property ? raw.math_property : null;
  if ((PROPERTY as readonly string[]).includes(math) && !mathProperty) {
    throw ApiError.validation(`${attr}__math_property`, `Math "${math}" needs a math_property.`, 'required');
  }
  return {
    event: typeof raw.event === 'string' ? raw.event : null,
    math: math as Math,
    mathProperty,
    filters: parseProperties(raw.properties, `${attr}__properties`),
    raw,
  };
}

const NUMBER_TEXT = '^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$';

/** A property read as a number (PostHog's toFloat): JSON numbers and numeric text; anything else NULL. */
function numberOf(key: string): SQL {
  const text = sql`(events.properties ->> ${key})`;
  return sql`(case when ${text} ~ ${NUMBER_TEXT} then ${text}::float8 end)`;
}

/** Whether the events of a series (with the query's filters) need their persons joined. */
export const readsPersons = (series: Series, filters?: FilterNode) =>
  needsPersons(filters) || needsPersons(series.filters);

/** `from events [left join persons]` for a series: the persons join only where a filter reads them. */
export const eventsFrom = (persons: boolean) =>
  persons
    ? sql`events left join persons on persons.id = events.person_id and persons.project_id = events.project_id`
    : sql`events`;

/** A series' own conditions on events (project, event name, the query's and the series' filters). */
export function seriesConds(teamId: number, series: Series, filters?: FilterNode): SQL[] {
  const conds: SQL[] = [sql`events.project_id = ${teamId}`];
  if (series.event !== null) conds.push(sql`events.event = ${series.event}`);
  if (filters) conds.push(filterSql(filters));
  if (series.filters) conds.push(filterSql(series.filters));
  return conds;
}

/** The person an event counts for: its person, or its distinct id when it was sent without one. */
export const ACTOR = sql`coalesce(events.person_id::text, 'd:' || events.distinct_id)`;

/** Active-user windows: the days of activity a bucket's count looks back over, ending with the bucket. */
function windowDays(math: Math, interval: Interval): number | undefined {
  // Over weeks or months a 7- or 30-day window is no wider than a bucket: PostHog counts them as DAU.
  if (math === 'weekly_active' && (interval === 'minute' || interval === 'hour' || interval === 'day')) return 7;
  if (math === 'monthly_active' && interval !== 'month') return 30;
  return undefined;
}

function aggregateOf(math: Math): SQL {
  switch (math) {
    case 'total':
      return sql`count(*)`;
    case 'dau':
    case 'weekly_active':
    case 'monthly_active':
      return sql`count(distinct actor)`;
    case 'unique_session':
      return sql`count(distinct v)`;
    case 'sum':
      return sql`coalesce(sum(v), 0)`;
    case 'avg':
      return sql`coalesce(avg(v), 0)`;
    case 'min':
      return sql`coalesce(min(v), 0)`;
    case 'max':
      return sql`coalesce(max(v), 0)`;
    default:
      return sql`coalesce(percentile_cont(${QUANTILE[math]!}::float8) within group (order by v), 0)`;
  }
}

export type Shape = 'time' | 'total' | 'cumulative';

/** Maths whose value over several buckets is a function of the buckets' values (and which function). */
const MERGEABLE: Partial<Record<Math, string>> = { total: 'sum', sum: 'sum', min: 'min', max: 'max' };

export interface SeriesQuery {
  teamId: number;
  timezone: string;
  interval: Interval;
  period: Period;
  series: Series;
  filters?: FilterNode;
  breakdown?: Breakdown;
  shape: Shape;
}

/** One answer row: the bucket (local, absent for a total), the breakdown value and the number. */
export interface SeriesRow {
  b?: string;
  bv: string | null;
  value: number;
}

/**
 * The SQL of one series over one period: the project's matching events (`events.project_id` first, then
 * the time bounds, both on the project's timestamp index), read in the project's timezone, then counted
 * per bucket (or over the whole range for a total; once per actor, in their first bucket, for a cumulative
 * DAU) and per breakdown value. Breakdown values past the limit (ranked by the same math over the range)
 * are counted together as PostHog's "other".
 */
export function seriesSql(q: SeriesQuery): SQL {
  const { series, breakdown, interval, period, timezone: tz } = q;
  const math = series.math;
  const window = q.shape === 'total' ? windowDays(math, 'day') : windowDays(math, interval);
  const local = sql`(events.timestamp at time zone ${tz})`;
  const value =
    math === 'unique_session'
      ? sql`nullif(events.properties ->> '$session_id', '')`
      : series.mathProperty
        ? numberOf(series.mathProperty)
        : sql`null::float8`;
  const props = breakdown?.type === 'person' ? sql`persons.properties` : sql`events.properties`;
  const bv = breakdown
    ? sql`coalesce(nullif(${props} ->> ${breakdown.property}, ''), ${BREAKDOWN_NULL})`
    : sql`null::text`;
  const joinPersons = breakdown?.type === 'person' || readsPersons(series, q.filters);
  const conds = seriesConds(q.teamId, series, q.filters);
  const from = sql`${period.from}::timestamp`;
  const to = sql`${period.to}::timestamp`;
  // Active users of the first buckets count the days before the range too.
  const lower = window && q.shape !== 'total' ? sql`(${from} - ${`${window} days`}::interval)` : from;
  conds.push(sql`events.timestamp >= (${lower} at time zone ${tz})`);
  conds.push(sql`events.timestamp <= (${to} at time zone ${tz})`);
  const ev = sql`select ${local} as ts, ${ACTOR} as actor, ${value} as v, ${bv} as bv
    from ${eventsFrom(joinPersons)}
    where ${sql.join(conds, sql` and `)}`;
  const agg = aggregateOf(math);
  const src = breakdown
    ? sql`(select ev.ts, ev.actor, ev.v,
          case when r.rn <= ${breakdown.limit} then ev.bv else ${BREAKDOWN_OTHER} end as bv
        from ev join (select bv, row_number() over (order by ${agg} desc, bv asc) as rn
          from ev where ts >= ${from} group by bv) as r on r.bv = ev.bv)`
    : sql`ev`;
  const fmt = sql.raw(`'${LOCAL_FORMAT.replace('.US', '')}'`);
  const merge = MERGEABLE[math];
  if (breakdown && merge && !window) {
    // A count, sum, min or max of a group is the same function of its buckets' values: group once, then
    // rank the values by their merged total and fold those past the limit into "other".
    const bucket = q.shape === 'total' ? sql`null::timestamp` : bucketSql(sql`ts`, interval);
    const fn = sql.raw(merge);
    return sql`with ev as (${ev}),
      g as (select ${bucket} as b, bv, ${agg} as value from ev group by 1, 2),
      r as (select bv, row_number() over (order by ${fn}(value) desc, bv asc) as rn from g group by bv)
      select ${q.shape === 'total' ? sql`null` : sql`to_char(g.b, ${fmt})`} as b,
        case when r.rn <= ${breakdown.limit} then g.bv else ${BREAKDOWN_OTHER} end as bv, ${fn}(g.value) as value
      from g join r on r.bv = g.bv group by 1, 2`;
  }
  let body: SQL;
  if (q.shape === 'total') {
    const inWindow = window ? sql`where s.ts > ${to} - ${`${window} days`}::interval` : sql``;
    body = sql`select s.bv, ${agg} as value from ${src} as s ${inWindow} group by s.bv`;
  } else if (window) {
    const step = sql.raw(`'1 ${interval}'`);
    const list = JSON.stringify(period.buckets);
    const buckets = sql`(select x::timestamp as b from jsonb_array_elements_text(${list}::jsonb) as x)`;
    body = sql`select to_char(bk.b, ${fmt}) as b, s.bv, ${agg} as value from ${buckets} as bk
      join ${src} as s
        on s.ts >= bk.b + interval ${step} - ${`${window} days`}::interval and s.ts < bk.b + interval ${step}
      group by bk.b, s.bv`;
  } else if (q.shape === 'cumulative' && math === 'dau') {
    body = sql`select to_char(f.b, ${fmt}) as b, f.bv, count(*) as value
      from (select s.actor, s.bv, min(${bucketSql(sql`s.ts`, interval)}) as b
        from ${src} as s group by s.actor, s.bv) as f
      group by f.b, f.bv`;
  } else {
    // Grouped by the bucket's timestamp and written as text after: to_char on every row cost twice the scan.
    body = sql`select to_char(g.b, ${fmt}) as b, g.bv, g.value
      from (select ${bucketSql(sql`s.ts`, interval)} as b, s.bv, ${agg} as value from ${src} as s group by 1, 2) as g`;
  }
  return sql`with ev as (${ev}) ${body}`;
}
