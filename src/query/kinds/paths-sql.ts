import { sql, type SQL } from 'drizzle-orm';
import { filterSql } from '../../events/queries.js';
import type { FilterNode } from '../../events/filters.js';
import type { Period } from './date-range.js';
import { eventsFrom } from './series.js';

/** PostHog's `PathType`: which events make the paths. */
export type PathType = '$pageview' | '$screen' | 'custom_event' | 'hogql';
export const PATH_TYPES: readonly PathType[] = ['$pageview', '$screen', 'custom_event', 'hogql'];

export interface Cleaning {
  regex: string;
  alias: string;
}

export interface PathsPlan {
  teamId: number;
  timezone: string;
  period: Period;
  filters?: FilterNode;
  /** Join the events' persons (a filter or the HogQL expression reads them). */
  persons: boolean;
  types: PathType[];
  /** `pathsHogQLExpression` compiled over the events table, as text. */
  hogql?: SQL;
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

/** PostHog's session cut: a gap this long between a person's events starts a new path. */
const SESSION_GAP = sql.raw(`interval '30 minutes'`);

const and = (parts: SQL[]) => sql.join(parts, sql` and `);
const list = (values: string[]) =>
  sql.join(
    values.map((v) => sql`${v}::text`),
    sql`, `,
  );

/**
 * Whether an event type's step name applies: with `includeEventTypes`, the listed types; without, every type
 * not named in `excludeEvents` (PostHog's `_should_query_event`).
 */
const named = (p: PathsPlan, type: string) =>
  p.types.length ? p.types.includes(type as PathType) : !p.excludeEvents.includes(type);

/**
 * An event's step name: its name, or the HogQL expression's value; a page view's URL without one trailing
 * slash; a screen's name.
 */
function stepName(p: PathsPlan): SQL {
  let name: SQL = sql`events.event::text`;
  if (p.hogql && named(p, 'hogql')) name = p.hogql;
  if (named(p, '$pageview')) {
    // PostHog's replaceRegexpAll(url, '(.)/$', '\\1'), without a regular expression per event.
    const url = sql`coalesce(events.properties ->> '$current_url', '')`;
    name = sql`case when events.event = '$pageview'
      then case when ${url} like '_%/' then left(${url}, -1) else ${url} end else ${name} end`;
  }
  if (named(p, '$screen')) {
    name = sql`case when events.event = '$screen' then events.properties ->> '$screen_name' else ${name} end`;
  }
  return sql`coalesce(${name}, '')`;
}

/**
 * A grouping as a regular expression that matches from the start of a step name up to the end of the
 * grouping's first match, as short as it can: `*` is any text, everything else is literal.
 */
export const groupingPattern = (grouping: string) =>
  `^.*?${grouping.replace(/[^A-Za-z0-9\u0080-\uffff]/g, (c) => (c === '*' ? '.*?' : `\\${c}`))}`;

/**
 * A step name as the cleaning rules and groupings leave it: each rule's replacements in turn, then the
 * grouping that names it: among those that match somewhere in it, the one whose match ends first (the order
 * in which ClickHouse's multiMatchAnyIndex reports them), then the first listed.
 */
function finalName(p: PathsPlan, name: SQL): SQL {
  let out = name;
  for (const c of p.cleaning) out = sql`regexp_replace(${out}, ${c.regex}::text, ${c.alias}::text, 'g')`;
  if (!p.groupings.length) return out;
  const rows = sql.join(
    p.groupings.map((g, i) => sql`(${i}::int, ${g}::text, ${groupingPattern(g)}::text)`),
    sql`, `,
  );
  return sql`coalesce((select g.name from (values ${rows}) as g(i, name, re)
      cross join lateral (select length(substring(${out} from g.re)) as n) as m
      where m.n is not null order by m.n, g.i limit 1), ${out})`;
}

/** PostHog's event-type conditions: only with `includeEventTypes`, which also turns on `excludeEvents`. */
function typeConds(p: PathsPlan): SQL[] {
  if (!p.types.length) return [];
  const any: SQL[] = [];
  if (p.types.includes('$pageview')) any.push(sql`events.event = '$pageview'`);
  if (p.types.includes('$screen')) any.push(sql`events.event = '$screen'`);
  if (p.types.includes('custom_event')) any.push(sql`left(events.event, 1) <> '$'`);
  return any.length ? [sql`(${sql.join(any, sql` or `)})`] : [];
}

/** A lone start or end point loses one trailing slash, as page URLs do (PostHog's `target_point`). */
const stripSlash = (point: string) => (point.length > 1 && point.endsWith('/') ? point.slice(0, -1) : point);

/**
 * Each path's kept steps (`pos` from 1) out of `steps` (`k` from 1): the first `stepLimit` steps; from the
 * first start point on; up to the first end point, its last `stepLimit`; or from the start point to the
 * first end point after it, its first and last halves around a `...` step when longer than `stepLimit`.
 */
function limitedSql(p: PathsPlan): SQL {
  const n = p.stepLimit;
  const w = sql`partition by pid, did, session`;
  if (p.startPoint && p.endPoint) {
    const half = Math.floor(n / 2);
    return sql`select pid, did, session, ts,
        case when len > ${n} and j = ${half + 1} then '...' else item end as item,
        case when len <= ${n} or j <= ${half + 1} then j else j - len + ${2 * half + 1} end as pos
      from (select pid, did, session, ts, item, k - si + 1 as j, ei - si + 1 as len from (
          select s.*, min(k) filter (where item = ${p.endPoint}::text and k >= si) over (${w}) as ei
          from (select steps.*, min(k) filter (where item = ${p.startPoint}::text) over (${w}) as si
            from steps) as s
          where si is not null) as e
        where ei is not null and k between si and ei) as b
      where len <= ${n} or j <= ${half + 1} or j > len - ${half}`;
  }
  const point = p.endPoint ?? p.startPoint;
  if (!point) return sql`select pid, did, session, ts, item, k as pos from steps where k <= ${n}`;
  const found = sql`select steps.*, min(k) filter (where item = ${stripSlash(point)}::text) over (${w}) as t
    from steps`;
  if (p.endPoint) {
    return sql`select pid, did, session, ts, item, k - greatest(t - ${n}, 0) as pos from (${found}) as f
      where t is not null and k <= t and k > t - ${n}`;
  }
  return sql`select pid, did, session, ts, item, k - t + 1 as pos from (${found}) as f
    where t is not null and k >= t and k < t + ${n}`;
}

/**
 * PostHog's PathsQueryRunner in one statement. The range's events of the project (filtered, named, cleaned,
 * grouped, the excluded left out) are read per person in time order and cut into sessions at every gap of
 * 30 minutes or more; a step repeated in a row counts once (its last time); each session's steps are cut
 * to the start and end points and the step limit; then every link between consecutive steps is counted
 * with its average time in seconds, the most travelled first (ties by source and target, byte order).
 */
export function pathsSql(p: PathsPlan): SQL {
  const conds: SQL[] = [
    sql`events.project_id = ${p.teamId}`,
    sql`events.timestamp >= (${p.period.from}::timestamp at time zone ${p.timezone})`,
    sql`events.timestamp <= (${p.period.to}::timestamp at time zone ${p.timezone})`,
    ...typeConds(p),
  ];
  if (p.filters) conds.push(filterSql(p.filters));
  // The person, or the distinct id of an event sent without one: an integer to sort by, most of the time.
  const actor = sql`events.person_id as pid, case when events.person_id is null then events.distinct_id end as did`;
  const raw = sql`select ${actor}, events.timestamp as ts, events.id as seq, ${stepName(p)} as item
    from ${eventsFrom(p.persons)} where ${and(conds)}`;
  // Cleaning and grouping depend on the name alone: done once per name, not once per event.
  const renamed = p.cleaning.length || p.groupings.length;
  const names = renamed
    ? sql`names as materialized (select d.item as raw, ${finalName(p, sql`d.item`)} as item
        from (select distinct item from raw) as d),`
    : sql``;
  const source = renamed
    ? sql`select raw.pid, raw.did, raw.ts, raw.seq, names.item from raw join names on names.raw = raw.item`
    : sql`select pid, did, ts, seq, item from raw`;
  const excluded = p.types.length && p.excludeEvents.length ? sql`where item not in (${list(p.excludeEvents)})` : sql``;
  const having: SQL[] = [];
  if (p.minWeight) having.push(sql`count(*) >= ${p.minWeight}`);
  if (p.maxWeight) having.push(sql`count(*) <= ${p.maxWeight}`);
  return sql`with raw as (${raw}), ${names}
    kept as (select * from (${source}) as g ${excluded}),
    cut as (select pid, did, ts, seq, item, case when ts - lag(ts) over w >= ${SESSION_GAP} then 1 else 0 end as gap
      from kept window w as (partition by pid, did order by ts, seq)),
    sessions as (select pid, did, ts, seq, item, sum(gap) over w as session
      from cut window w as (partition by pid, did order by ts, seq rows between unbounded preceding and current row)),
    compact as (select pid, did, session, ts, seq, item
      from (select sessions.*, lead(item) over w as next
        from sessions window w as (partition by pid, did, session order by ts, seq)) as s
      where item <> coalesce(next, '')),
    steps as (select pid, did, session, ts, item, row_number() over w as k
      from compact window w as (partition by pid, did, session order by ts, seq)),
    limited as (${limitedSql(p)}),
    links as (select pos, item, ts, lag(item) over w as prev, lag(ts) over w as prev_ts
      from limited window w as (partition by pid, did, session order by pos)),
    counted as (select (pos - 1)::text || '_' || prev as source, pos::text || '_' || item as target,
        count(*) as value, avg(extract(epoch from ts - prev_ts))::float8 as seconds
      from links where pos > 1 group by 1, 2 ${having.length ? sql`having ${and(having)}` : sql``})
    select source, target, value, seconds from counted
    order by value desc, source collate "C", target collate "C"
    limit ${p.edgeLimit}`;
}
