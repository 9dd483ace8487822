import { BUCKET, fieldOf, filterHogQL, rangeConditions } from './series-hogql.js';
import type { Interval, Period } from './date-range.js';
import type { FilterNode } from '../../events/filters.js';
import type { KindHogQL } from './execute-hogql.js';
import type { Series } from './series.js';

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
  period: Period;
  steps: Series[];
  order: OrderType;
  windowSeconds: number;
  exclusions: Exclusion[];
  filters?: FilterNode;
  breakdown?: FunnelBreakdown;
}

/*
 * "Strictly after" is a frame ending one microsecond before the current row's time (`1 PRECEDING` of a
 * DateTime64(6)). Rows are read newest first, so that each frame starts at the partition's head and each row's
 * minimum is carried over from the row before (PostgreSQL recomputes a frame whose head moves: quadratic per
 * person).
 */
const AFTER = 'w_at';
const STRICTLY_AFTER = 'w_after';
/** The two windows, named once: PostHog's parser takes a long time over long texts (2.7 s for 30 steps). */
const WINDOWS = `WINDOW w_at AS (PARTITION BY actor ORDER BY ts DESC RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
  w_after AS (PARTITION BY actor ORDER BY ts DESC RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)`;
/** The end of the conversion window of a start at `ts` (`until`, computed after the windows' sort). */
const W = 'toIntervalSecond({window})';
const UNTIL = `ts + ${W} AS until`;
const range = (n: number, f: (k: number) => string) => Array.from({ length: n }, (_, k) => f(k));

/** Whether two steps can match the same event: then the later one must come strictly after (PostHog's rule). */
const overlaps = (a: Series, b: Series) => a.event === null || b.event === null || a.event === b.event;

class FunnelText {
  readonly values: KindHogQL['values'] = {};
  readonly n: number;
  constructor(readonly q: FunnelPlan) {
    this.n = q.steps.length;
    this.values.window = q.windowSeconds;
  }

  private match(s: { event: string | null; filters?: FilterNode }, key: string): string {
    const parts: string[] = [];
    if (s.event !== null) {
      this.values[key] = s.event;
      parts.push(`event = {${key}}`);
    }
    if (s.filters) parts.push(filterHogQL(s.filters));
    if (parts.length > 1) return `(${parts.join(' AND ')})`;
    return parts[0] ?? 'true';
  }

  /**
   * The plan's events, one row each: the actor (its person as ingestion merged it), the time, which steps and
   * exclusions it matches, and the breakdown value. A strict funnel reads every event of the range (any other
   * event between two steps breaks it); the others only the events that match a step or an exclusion.
   */
  events(): string {
    const { q } = this;
    const steps = q.steps.map((s, i) => this.match(s, `e${i}`));
    const exclusions = q.exclusions.map((x, j) => this.match(x, `x${j}`));
    const conds = rangeConditions(q.period, this.values, 'date', q.period.from);
    if (q.filters) conds.push(filterHogQL(q.filters));
    if (q.order !== 'strict') {
      const named = [...q.steps, ...q.exclusions].map((s) => s.event);
      if (!named.includes(null)) {
        this.values.names = [...new Set(named as string[])];
        conds.push('event IN {names}');
      }
      conds.push(`(${[...steps, ...exclusions].join(' OR ')})`);
    }
    const b = q.breakdown;
    const bv = b
      ? `toString(${fieldOf(...(b.type === 'person' ? ['person'] : []), 'properties', b.property)})`
      : 'NULL';
    const cols = [...steps.map((m, i) => `${m} AS s${i}`), ...exclusions.map((m, j) => `${m} AS x${j}`)];
    return `ev AS (SELECT person_id AS actor, timestamp AS ts,
  ${cols.join(', ')}, ${bv} AS bv
FROM events WHERE ${conds.join(' AND ')})`;
  }

  /** Next exclusion event strictly after each row, per exclusion. */
  private exclusionNext(): string[] {
    return this.q.exclusions.map((_, j) => `, minIf(ts, x${j}) OVER ${STRICTLY_AFTER} AS e${j}`);
  }

  /**
   * Every start of a path (an event of the first step) and how far it goes, as `t0..t{n-1}` (null past the
   * last step reached), its start's time `ts` and `excluded`. Ordered: each step the earliest matching event at
   * or after the step before (strictly after when the two steps can match the same event), all within the
   * window of the first; strict: the person's very next events; unordered: every step with an event within
   * the window of the start, their times sorted.
   */
  paths(): string {
    if (this.q.order === 'unordered') return this.unordered();
    if (this.q.order === 'strict') return this.strict();
    return this.ordered();
  }

  private unordered(): string {
    const { q, n } = this;
    const firsts = q.steps.map((_, i) => `, minIf(ts, s${i}) OVER ${AFTER} AS f${i}`);
    const reached = range(n, (i) => `if(f${i} <= until, f${i}, NULL)`);
    const anyExcluded = q.exclusions.map((_, j) => `x${j}`).join(' OR ');
    const eAny = q.exclusions.length ? `, minIf(ts, ${anyExcluded}) OVER ${STRICTLY_AFTER} AS e_any` : '';
    // Sorted ascending, the steps not reached (NULL) come last.
    const last = `coalesce(${range(n, (k) => `t${n - 1 - k}`).join(', ')})`;
    const excluded = q.exclusions.length
      ? `e_any IS NOT NULL AND e_any <= t0 + ${W} AND (t${n - 1} IS NULL OR e_any < ${last})`
      : 'false';
    const start = range(n, (i) => `s${i}`).join(' OR ');
    return `nx AS (SELECT actor, ts, ${UNTIL}, ${start} AS start${firsts.join('')}${eAny}
  FROM ev ${WINDOWS}),
srt AS (SELECT actor, ts, ${eAny ? 'e_any, ' : ''}arraySort([${reached.join(', ')}]) AS arr FROM nx WHERE start),
reached AS (SELECT actor, ts, ${eAny ? 'e_any, ' : ''}${range(n, (k) => `arr[${k + 1}] AS t${k}`).join(', ')} FROM srt),
paths AS (SELECT actor, ts, ${this.times()}, ${excluded} AS excluded FROM reached)`;
  }

  private strict(): string {
    const { q, n } = this;
    const leads: string[] = [];
    for (let k = 1; k < n; k++) leads.push(`, lead(s${k}, ${k}) OVER w AS ls${k}, lead(ts, ${k}) OVER w AS lt${k}`);
    for (const [j, x] of q.exclusions.entries()) leads.push(`, lead(e${j}, ${x.from}) OVER w AS le${j}`);
    const cols = range(n - 1, (i) => {
      const k = i + 1;
      const ok = range(k, (m) => `ls${m + 1}`).join(' AND ');
      return `if(${ok} AND lt${k} <= until, lt${k}, NULL) AS t${k}`;
    });
    const le = q.exclusions.map((_, j) => `, le${j}`).join('');
    const nexts = this.exclusionNext().join('');
    const steps = range(n, (i) => `s${i}`).join(', ');
    return `nx1 AS (SELECT actor, ts, ${UNTIL}, ${steps}${nexts} FROM ev${nexts ? ` ${WINDOWS}` : ''}),
nx AS (SELECT actor, ts, until, s0${leads.join('')} FROM nx1 WINDOW w AS (PARTITION BY actor ORDER BY ts)),
p AS (SELECT actor, ts, ts AS t0, ${cols.join(', ')}${le} FROM nx WHERE s0),
paths AS (SELECT actor, ts, ${this.times()}, ${this.exclusionFlag()} AS excluded FROM p)`;
  }

  /** Ordered: the next event of step k at or after each time, per person; a path follows them step by step. */
  private ordered(): string {
    const { q, n } = this;
    const nexts = q.steps.slice(1).map((s, i) => {
      const frame = overlaps(q.steps[i]!, s) ? STRICTLY_AFTER : AFTER;
      return `, minIf(ts, s${i + 1}) OVER ${frame} AS n${i + 1}`;
    });
    const cols = [...range(n - 1, (i) => `n${i + 1}`), ...q.exclusions.map((_, j) => `e${j}`)];
    // A path looks up the next steps at the time of each step it reached, 1 to n-2: only those steps' rows are
    // needed (the frames are by time, so every row at one time has the same next steps).
    const src = (k: number) => (k === 0 ? 'p' : `c${k}`);
    // The time of step k on the path: the start's own, or the next event of step k after the step before.
    const at = (k: number) => (k === 1 ? 'p.n1' : `${src(k - 1)}.pn${k}`);
    const joins = range(n - 2, (i) => {
      const k = i + 1;
      const c = src(k);
      return `LEFT JOIN pts AS ${c} ON ${c}.actor = p.actor AND ${c}.ts = ${at(k)} AND ${at(k)} <= p.until`;
    });
    const tcols = range(n, (k) => (k === 0 ? 'p.ts AS t0' : `if(${at(k)} <= p.until, ${at(k)}, NULL) AS t${k}`));
    const exAt = q.exclusions.map((x, j) => `, ${x.from ? `${src(x.from)}.pe` : 'p.e'}${j} AS le${j}`).join('');
    const stepCols = range(n, (i) => `s${i}`).join(', ');
    const windowed = `${nexts.join('')}${this.exclusionNext().join('')}`;
    return `nx AS (SELECT actor, ts, ${UNTIL}, ${stepCols}${windowed} FROM ev ${WINDOWS}),
pts AS (SELECT actor, ts, ${cols.map((c) => `min(${c}) AS p${c}`).join(', ')} FROM nx
  WHERE ${range(Math.max(n - 2, 1), (i) => `s${i + 1}`).join(' OR ')} GROUP BY actor, ts),
p0 AS (SELECT p.actor AS actor, p.ts AS ts, ${tcols.join(', ')}${exAt}
  FROM nx AS p ${joins.join('\n')} WHERE p.s0),
paths AS (SELECT actor, ts, ${this.times()}, ${this.exclusionFlag()} AS excluded FROM p0)`;
  }

  private times(): string {
    return range(this.n, (k) => `t${k}`).join(', ');
  }

  /**
   * A path is excluded when an exclusion event comes after it reached the exclusion's first step and before it
   * reached its last (or, when it never did, within the window of the start), as PostHog's funnel does.
   */
  private exclusionFlag(): string {
    if (!this.q.exclusions.length) return 'false';
    const flags = this.q.exclusions.map(
      (x, j) => `(t${x.from} IS NOT NULL AND le${j} IS NOT NULL AND le${j} <= t0 + ${W}
    AND (t${x.to} IS NULL OR le${j} < t${x.to}))`,
    );
    return `(${flags.join(' OR ')})`;
  }

  /** Each actor's breakdown value: that of their first event with one (or their last, for last touch). */
  touch(): string {
    const order = this.q.breakdown?.attribution === 'last_touch' ? 'DESC' : 'ASC';
    return `touch AS (SELECT actor, bv FROM (SELECT actor, bv,
    row_number() OVER (PARTITION BY actor ORDER BY ts ${order}) AS rn FROM ev WHERE bv IS NOT NULL) WHERE rn = 1)`;
  }

  /** Each person's one path, as PostHog's funnel picks it: the furthest, then the quickest, then the latest. */
  people(): string {
    const { n } = this;
    const steps = range(n, (k) => `if(t${k} IS NOT NULL, 1, 0)`).join(' + ');
    const last = `coalesce(${range(n, (k) => `t${n - 1 - k}`).join(', ')})`;
    const best = `best AS (SELECT actor, steps, ${this.times()} FROM (SELECT actor, steps, ex, ${this.times()},
    row_number() OVER (PARTITION BY actor ORDER BY steps DESC, ex ASC, ${last} ASC, t0 DESC) AS rn
  FROM (SELECT actor, ${steps} AS steps, if(excluded, 1, 0) AS ex, ${this.times()} FROM paths))
  WHERE rn = 1 AND ex = 0)`;
    if (!this.q.breakdown) return `${best}, people AS (SELECT actor, steps, ${this.times()}, '' AS bv FROM best)`;
    return `${best}, ${this.touch()},
people AS (SELECT b.actor AS actor, b.steps AS steps, ${range(n, (k) => `b.t${k} AS t${k}`).join(', ')},
  coalesce(touch.bv, '') AS bv FROM best AS b LEFT JOIN touch ON touch.actor = b.actor)`;
  }
}

/**
 * A FunnelsQuery's steps as HogQL: per breakdown value (`breakdown_value`, values past the limit as "Other"),
 * persons per step (`c<k>`), and mean and median seconds from each step to the next (`avg<k>`, `med<k>`).
 */
export function funnelStepsHogQL(q: FunnelPlan): KindHogQL {
  const f = new FunnelText(q);
  const { n } = f;
  const counts = range(n, (k) => `countIf(steps >= ${k + 1}) AS c${k}`);
  const times = range(n - 1, (i) => {
    const k = i + 1;
    const d = `(toUnixTimestamp64Micro(t${k}) - toUnixTimestamp64Micro(t${k - 1})) / 1000000`;
    return `avgIf(${d}, t${k} > t${k - 1}) AS avg${k}, medianIf(${d}, t${k} > t${k - 1}) AS med${k}`;
  });
  const cols = [...counts, ...times].join(', ');
  const head = `WITH ${f.events()},\n${f.paths()},\n${f.people()}\n`;
  if (!q.breakdown) return { text: `${head}SELECT NULL AS breakdown_value, ${cols} FROM people`, values: f.values };
  f.values.limit = q.breakdown.limit;
  const rank = range(n, (k) => `c${n - 1 - k} DESC`).join(', ');
  return {
    text: `${head}SELECT if(r.rn <= {limit}, people.bv, 'Other') AS breakdown_value, ${cols}
FROM people INNER JOIN (SELECT bv, row_number() OVER (ORDER BY ${rank}, bv ASC) AS rn
  FROM (SELECT bv, ${counts.join(', ')} FROM people GROUP BY bv)) AS r ON r.bv = people.bv
GROUP BY breakdown_value`,
    values: f.values,
  };
}

/**
 * Funnel trends as HogQL: per period of the start (`b`, the project's timezone) and breakdown value, the
 * persons who entered at `from` and those of them who reached `to`.
 */
export function funnelTrendsHogQL(q: FunnelPlan, interval: Interval, from: number, to: number): KindHogQL {
  const f = new FunnelText(q);
  const head = `WITH ${f.events()},\n${f.paths()}`;
  const entries = `entries AS (SELECT actor, ${BUCKET[interval]}(ts) AS b, countIf(t${from} IS NOT NULL) > 0 AS entered,
  countIf(t${to} IS NOT NULL AND NOT excluded) > 0 AS converted FROM paths GROUP BY actor, b)`;
  const counts = 'countIf(e.entered) AS entered, countIf(e.entered AND e.converted) AS converted';
  if (!q.breakdown) {
    return {
      text: `${head},\n${entries}\nSELECT e.b AS b, NULL AS breakdown_value, ${counts} FROM entries AS e GROUP BY b`,
      values: f.values,
    };
  }
  return {
    text: `${head},\n${f.touch()},\n${entries}
SELECT e.b AS b, coalesce(touch.bv, '') AS breakdown_value, ${counts}
FROM entries AS e LEFT JOIN touch ON touch.actor = e.actor GROUP BY b, breakdown_value`,
    values: f.values,
  };
}
