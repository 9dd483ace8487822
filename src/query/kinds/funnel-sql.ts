import { sql, type SQL } from 'drizzle-orm';
import { filterSql } from '../../events/queries.js';
import { needsPersons, type FilterNode } from '../../events/filters.js';
import { bucketSql, type Interval, LOCAL_FORMAT, type Period } from './date-range.js';
import { ACTOR, eventsFrom, type Series } from './series.js';

export type OrderType = 'ordered' | 'strict' | 'unordered';

export interface Exclusion {
  event: string | null;
  filters?: FilterNode;
  from: number;
  to: number;
}

export interface FunnelBreakdown {
  property: string;
  type: 'event' | 'person';
  limit: number;
  attribution: 'first_touch' | 'last_touch';
}

export interface FunnelPlan {
  teamId: number;
  timezone: string;
  period: Period;
  steps: Series[];
  order: OrderType;
  windowSeconds: number;
  exclusions: Exclusion[];
  filters?: FilterNode;
  breakdown?: FunnelBreakdown;
}

const and = (parts: SQL[]) => (parts.length ? sql.join(parts, sql` and `) : sql`true`);
const or = (parts: SQL[]) => (parts.length ? sql`(${sql.join(parts, sql` or `)})` : sql`false`);
const id = (name: string) => sql.raw(name);

function matchSql(event: string | null, filters?: FilterNode): SQL {
  const parts: SQL[] = [];
  if (event !== null) parts.push(sql`events.event = ${event}`);
  if (filters) parts.push(filterSql(filters));
  return sql`(${and(parts)})`;
}

/** Whether two steps can match the same event: then the later one must come strictly after (PostHog's rule). */
const overlaps = (a: Series, b: Series) => a.event === null || b.event === null || a.event === b.event;

/**
 * The plan's events, one row each: the actor (its person as ingestion merged it), the time, which steps and
 * exclusions it matches, and the breakdown value. A strict funnel reads every event of the range (any other
 * event between two steps breaks it); the others only the events that match a step or an exclusion.
 */
function eventsSql(q: FunnelPlan): SQL {
  const { steps, exclusions, breakdown } = q;
  const persons =
    needsPersons(q.filters) ||
    steps.some((s) => needsPersons(s.filters)) ||
    exclusions.some((x) => needsPersons(x.filters)) ||
    breakdown?.type === 'person';
  const stepCols = steps.map((s, i) => sql`${matchSql(s.event, s.filters)} as ${id(`s${i}`)}`);
  const exCols = exclusions.map((x, j) => sql`${matchSql(x.event, x.filters)} as ${id(`x${j}`)}`);
  const props = breakdown?.type === 'person' ? sql`persons.properties` : sql`events.properties`;
  const bv = breakdown ? sql`(${props} ->> ${breakdown.property})` : sql`null::text`;
  const conds: SQL[] = [
    sql`events.project_id = ${q.teamId}`,
    sql`events.timestamp >= (${q.period.from}::timestamp at time zone ${q.timezone})`,
    sql`events.timestamp <= (${q.period.to}::timestamp at time zone ${q.timezone})`,
  ];
  if (q.filters) conds.push(filterSql(q.filters));
  if (q.order !== 'strict') {
    const named = [...steps, ...exclusions].map((s) => s.event);
    if (!named.includes(null))
      conds.push(
        sql`events.event in (${sql.join(
          [...new Set(named)].map((e) => sql`${e}`),
          sql`, `,
        )})`,
      );
    conds.push(or([...steps, ...exclusions].map((s) => matchSql(s.event, s.filters))));
  }
  return sql`select ${ACTOR} as actor, events.timestamp as ts, ${sql.join([...stepCols, ...exCols], sql`, `)},
      ${bv} as bv
    from ${eventsFrom(persons)} where ${and(conds)}`;
}

const window = (q: FunnelPlan) => sql`${`${q.windowSeconds} seconds`}::interval`;
// Read newest first, so that the frame starts at the partition's head and each row's minimum is carried
// over from the row before (PostgreSQL recomputes a frame whose head moves: quadratic per person).
const AFTER = sql`partition by actor order by ts desc range between unbounded preceding and current row`;
const STRICTLY_AFTER = sql`partition by actor order by ts desc range between unbounded preceding
  and interval '1 microsecond' preceding`;

/** Next exclusion event strictly after each row, per exclusion. */
const exclusionNext = (q: FunnelPlan) =>
  q.exclusions.map((_, j) => sql`, min(ts) filter (where ${id(`x${j}`)}) over (${STRICTLY_AFTER}) as ${id(`e${j}`)}`);

/**
 * Every start of a path (an event of the first step) and how far it goes, as `t0..t{n-1}` (null past the
 * last step reached) and `excluded`. Ordered: each step the earliest matching event at or after the step
 * before (strictly after when the two steps can match the same event), all within the window of the
 * first; strict: the person's very next events; unordered: every step with an event within the window
 * of the start, their times sorted.
 */
function pathsSql(q: FunnelPlan): SQL {
  const n = q.steps.length;
  const w = window(q);
  const ts = Array.from({ length: n }, (_, k) => id(`t${k}`));
  if (q.order === 'unordered') {
    const firsts = q.steps.map(
      (_, i) => sql`, min(ts) filter (where ${id(`s${i}`)}) over (${AFTER}) as ${id(`f${i}`)}`,
    );
    const reached = q.steps.map((_, i) => sql`case when ${id(`f${i}`)} <= ts + ${w} then ${id(`f${i}`)} end`);
    const anyStep = or(q.steps.map((_, i) => id(`s${i}`)));
    const eAny = q.exclusions.length
      ? sql`least(${sql.join(
          q.exclusions.map((_, j) => id(`e${j}`)),
          sql`, `,
        )})`
      : sql`null::timestamptz`;
    const nexts = sql.join([...firsts, ...exclusionNext(q)], sql``);
    return sql`nx as (select actor, ts, ${anyStep} as start ${nexts} from ev),
      srt as (select actor, ts, ${eAny} as e_any,
        array(select x from unnest(array[${sql.join(reached, sql`, `)}]) as x where x is not null order by x) as arr
        from nx where start),
      paths as (select actor, ${sql.join(
        ts.map((t, k) => sql`arr[${k + 1}] as ${t}`),
        sql`, `,
      )}, ${exclusionFlag(q, 'unordered')} as excluded from srt)`;
  }
  if (q.order === 'strict') {
    const leads: SQL[] = [];
    for (let k = 1; k < n; k++) {
      leads.push(sql`, lead(${id(`s${k}`)}, ${k}) over w as ${id(`ls${k}`)}, lead(ts, ${k}) over w as ${id(`lt${k}`)}`);
    }
    for (const [j, x] of q.exclusions.entries()) {
      leads.push(sql`, lead(${id(`e${j}`)}, ${x.from}) over w as ${id(`le${j}`)}`);
    }
    const cols = ts.map((t, k) => {
      if (k === 0) return sql`ts as t0`;
      const ok = Array.from({ length: k }, (_, i) => id(`ls${i + 1}`));
      return sql`case when ${and(ok)} and ${id(`lt${k}`)} <= ts + ${w} then ${id(`lt${k}`)} end as ${t}`;
    });
    return sql`nx1 as (select actor, ts, ${sql.join(
      q.steps.map((_, i) => id(`s${i}`)),
      sql`, `,
    )} ${sql.join(exclusionNext(q), sql``)} from ev),
      nx as (select actor, ts, s0 ${sql.join(leads, sql``)} from nx1 window w as (partition by actor order by ts)),
      p as (select actor, ${sql.join(cols, sql`, `)} ${sql.join(
        q.exclusions.map((_, j) => sql`, ${id(`le${j}`)}`),
        sql``,
      )} from nx where s0),
      paths as (select actor, ${sql.join(ts, sql`, `)}, ${exclusionFlag(q, 'strict')} as excluded from p)`;
  }
  // Ordered: the next event of step k at or after each time, per person; a path follows them step by step.
  const nexts = q.steps.slice(1).map((s, i) => {
    const k = i + 1;
    const frame = overlaps(q.steps[k - 1]!, s) ? STRICTLY_AFTER : AFTER;
    return sql`, min(ts) filter (where ${id(`s${k}`)}) over (${frame}) as ${id(`n${k}`)}`;
  });
  const cols = [
    ...Array.from({ length: n - 1 }, (_, i) => id(`n${i + 1}`)),
    ...q.exclusions.map((_, j) => id(`e${j}`)),
  ];
  const joins: SQL[] = [];
  const src = (k: number) => (k === 0 ? id('p') : id(`c${k}`));
  const at = (k: number) => (k === 0 ? sql`p.ts` : sql`${src(k - 1)}.${id(`n${k}`)}`);
  for (let k = 1; k <= n - 2; k++) {
    joins.push(sql`left join pts as ${src(k)} on ${src(k)}.actor = p.actor and ${src(k)}.ts = ${at(k)}
      and ${at(k)} <= p.ts + ${w}`);
  }
  const tcols = ts.map((t, k) =>
    k === 0 ? sql`p.ts as t0` : sql`case when ${at(k)} <= p.ts + ${w} then ${at(k)} end as ${t}`,
  );
  const exAt = q.exclusions.map((x, j) => sql`, ${src(x.from)}.${id(`e${j}`)} as ${id(`le${j}`)}`);
  return sql`nx as (select actor, ts, s0 ${sql.join(nexts, sql``)} ${sql.join(exclusionNext(q), sql``)} from ev),
    pts as (select actor, ts, ${sql.join(
      cols.map((c) => sql`min(${c}) as ${c}`),
      sql`, `,
    )} from nx group by actor, ts),
    p0 as (select p.actor, ${sql.join(tcols, sql`, `)} ${sql.join(exAt, sql``)}
      from nx as p ${sql.join(joins, sql` `)} where p.s0),
    paths as (select actor, ${sql.join(ts, sql`, `)}, ${exclusionFlag(q, 'ordered')} as excluded from p0)`;
}

/**
 * A path is excluded when an exclusion event comes after it reached the exclusion's first step and before it
 * reached its last (or, when it never did, within the window of the start), as PostHog's funnel does.
 */
function exclusionFlag(q: FunnelPlan, order: OrderType): SQL {
  if (!q.exclusions.length) return sql`false`;
  const w = window(q);
  const flags = q.exclusions.map((x, j) => {
    if (order === 'unordered') {
      const last = sql`arr[array_length(arr, 1)]`;
      return sql`(e_any is not null and e_any <= ts + ${w}
        and (array_length(arr, 1) < ${q.steps.length} or e_any < ${last}))`;
    }
    const le = id(`le${j}`);
    return sql`(${id(`t${x.from}`)} is not null and ${le} is not null and ${le} <= t0 + ${w}
      and (${id(`t${x.to}`)} is null or ${le} < ${id(`t${x.to}`)}))`;
  });
  return or(flags);
}

/** Each person's one path, as PostHog's funnel picks it, and their breakdown value (first or last touch). */
function bestSql(q: FunnelPlan): SQL {
  const n = q.steps.length;
  const ts = Array.from({ length: n }, (_, k) => id(`t${k}`));
  const steps = sql`(${sql.join(
    ts.map((t) => sql`(${t} is not null)::int`),
    sql` + `,
  )})`;
  const last = sql`coalesce(${sql.join([...ts].reverse(), sql`, `)})`;
  const touch = q.breakdown?.attribution === 'last_touch' ? sql`desc` : sql`asc`;
  return sql`best as (select distinct on (actor) actor, ${steps} as steps, excluded, ${sql.join(ts, sql`, `)}
      from paths order by actor, ${steps} desc, excluded asc, ${last} asc, t0 desc),
    touch as (select distinct on (actor) actor, bv from ev where bv is not null order by actor, ts ${touch}),
    people as (select b.*, coalesce(touch.bv, '') as bv from best as b left join touch on touch.actor = b.actor
      where not b.excluded)`;
}

/** Per breakdown value: persons per step, and mean and median seconds from each step to the next. */
export function funnelStepsSql(q: FunnelPlan): SQL {
  const n = q.steps.length;
  const counts = q.steps.map((_, k) => sql`count(*) filter (where steps >= ${k + 1}) as ${id(`c${k}`)}`);
  const times: SQL[] = [];
  for (let k = 1; k < n; k++) {
    const d = sql`extract(epoch from (${id(`t${k}`)} - ${id(`t${k - 1}`)}))::float8`;
    times.push(sql`avg(${d}) filter (where ${d} > 0) as ${id(`avg${k}`)}`);
    times.push(sql`percentile_cont(0.5) within group (order by ${d}) filter (where ${d} > 0) as ${id(`med${k}`)}`);
  }
  const cols = sql.join([...counts, ...times], sql`, `);
  let grouped: SQL;
  if (q.breakdown) {
    const rank = Array.from({ length: n }, (_, i) => sql`${id(`c${n - 1 - i}`)} desc`);
    grouped = sql`, ranked as (select bv, row_number() over (order by ${sql.join(rank, sql`, `)}, bv) as rn
        from (select bv, ${sql.join(counts, sql`, `)} from people group by bv) as g)
      select case when r.rn <= ${q.breakdown.limit} then people.bv else 'Other' end as bv, ${cols}
      from people join ranked as r on r.bv = people.bv group by 1`;
  } else {
    grouped = sql` select null as bv, ${cols} from people`;
  }
  return sql`with ev as (${eventsSql(q)}), ${pathsSql(q)}, ${bestSql(q)} ${grouped}`;
}

/**
 * Funnel trends: per period of the start (the project's timezone) and breakdown value, the persons who
 * entered at `from` and those of them who reached `to`.
 */
export function funnelTrendsSql(q: FunnelPlan, interval: Interval, from: number, to: number): SQL {
  const bucket = bucketSql(sql`(t0 at time zone ${q.timezone})`, interval);
  const fmt = sql.raw(`'${LOCAL_FORMAT.replace('.US', '')}'`);
  const touch = q.breakdown?.attribution === 'last_touch' ? sql`desc` : sql`asc`;
  return sql`with ev as (${eventsSql(q)}), ${pathsSql(q)},
    touch as (select distinct on (actor) actor, bv from ev where bv is not null order by actor, ts ${touch}),
    entries as (select actor, ${bucket} as b, bool_or(${id(`t${from}`)} is not null) as entered,
        bool_or(${id(`t${to}`)} is not null and not excluded) as converted
      from paths group by 1, 2)
    select to_char(e.b, ${fmt}) as b, ${q.breakdown ? sql`coalesce(touch.bv, '')` : sql`null`} as bv,
      count(*) filter (where entered) as entered, count(*) filter (where entered and converted) as converted
    from entries as e left join touch on touch.actor = e.actor group by 1, 2`;
}
