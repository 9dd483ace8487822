import { sql } from 'drizzle-orm';
import { ApiError } from '../../core/errors.js';
import type { FilterNode } from '../../events/filters.js';
import { Timings } from '../timings.js';
import {
  bucketSql,
  dayOf,
  INTERVALS,
  type Interval,
  isoOf,
  LOCAL_FORMAT,
  planRange,
  type RangePlan,
  resolveRange,
} from './date-range.js';
import { execute, type Executor } from './execute.js';
import { eventsFrom, parseProperties, parseSeries, readsPersons, type Series, seriesConds } from './series.js';

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
  const step = sql.raw(`interval '1 ${p.interval}'`);
  const first = sql`${buckets[0]!}::timestamp`;
  const last = sql`${buckets.at(-1)!}::timestamp`;
  const conds = seriesConds(teamId, p.series, p.filters);
  conds.push(sql`events.person_id is not null`);
  conds.push(sql`events.timestamp >= ((${first} - ${step}) at time zone ${tz})`);
  conds.push(sql`events.timestamp < ((${last} + ${step}) at time zone ${tz})`);
  const fmt = sql.raw(`'${LOCAL_FORMAT.replace('.US', '')}'`);
  const statement = sql`with active as (
      select events.person_id as pid, ${bucketSql(sql`(events.timestamp at time zone ${tz})`, p.interval)} as b
      from ${eventsFrom(readsPersons(p.series, p.filters))}
      where ${sql.join(conds, sql` and `)}
      group by 1, 2),
    marked as (
      select a.pid, a.b,
        lag(a.b) over (partition by a.pid order by a.b) as prev,
        lead(a.b) over (partition by a.pid order by a.b) as next,
        ${bucketSql(sql`(c.created_at at time zone ${tz})`, p.interval)} as created
      from active as a join persons as c on c.id = a.pid and c.project_id = ${teamId}),
    statuses as (
      select b, case when prev is null and b = created then 'new'
          when prev is not null and prev = b - ${step} then 'returning' else 'resurrecting' end as status, pid
        from marked
      union all
      select b + ${step}, 'dormant', pid from marked where next is null or next <> b + ${step})
    select to_char(b, ${fmt}) as b, status, count(distinct pid) as value from statuses
    where b >= ${first} and b <= ${last} group by 1, 2`;
  const rows = await timings.measure('execute', () =>
    execute<{ b: string; status: string; value: number }>(ex, statement),
  );
  const event = p.series.event;
  const name = event ?? 'All events';
  const results = STATUSES.map((status) => {
    const values = new Map(rows.filter((r) => r.status === status).map((r) => [r.b, Number(r.value)]));
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
    hogql: null,
    resolved_date_range: { date_from: isoOf(range.current.from, tz), date_to: isoOf(range.current.to, tz) },
    timings: timings.list(),
  };
}
