import { sql, type SQL } from 'drizzle-orm';
import { ApiError } from '../../core/errors.js';
import type { Executor } from './execute.js';
import { statementTarget } from '../run.js';
import { rowsOf } from '../../db/queries/util.js';

export type Interval = 'minute' | 'hour' | 'day' | 'week' | 'month';
export const INTERVALS: readonly Interval[] = ['minute', 'hour', 'day', 'week', 'month'];

/** The most buckets one series may have (a minute interval over months would answer millions). */
export const MAX_BUCKETS = 10_000;

export interface DateRangeInput {
  date_from?: string | null;
  date_to?: string | null;
  explicitDate?: boolean | null;
}

/** A resolved period: wall-clock bounds in the project's timezone (inclusive), and its buckets. */
export interface Period {
  /** `YYYY-MM-DD HH:MM:SS.ffffff`, local time of the project. */
  from: string;
  to: string;
  /** Bucket starts, local `YYYY-MM-DD HH:MM:SS`, oldest first. */
  buckets: string[];
}

export interface ResolvedRange {
  timezone: string;
  interval: Interval;
  current: Period;
  previous?: Period;
}

const RELATIVE = /^(-?\d+)?([hdwmqyM])(Start|End)?$/;
const UNIT: Record<string, string> = {
  M: 'minute',
  h: 'hour',
  d: 'day',
  w: 'week',
  m: 'month',
  q: 'quarter',
  y: 'year',
};
const AMOUNT: Record<string, [number, string]> = {
  M: [1, 'minutes'],
  h: [1, 'hours'],
  d: [1, 'days'],
  w: [7, 'days'],
  m: [1, 'months'],
  q: [3, 'months'],
  y: [1, 'years'],
};
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?([zZ]|[+-]\d{2}:?\d{2})?$/;

/** Whether a text is a date a range may start or end at: a date, a date-time, a relative date, or `all`. */
export function isDateText(text: string): boolean {
  const value = text.trim();
  if (value === 'all' || RELATIVE.test(value)) return true;
  if (ISO_DATE.test(value)) return !Number.isNaN(Date.parse(value));
  return ISO_TIME.test(value) && !Number.isNaN(Date.parse(value.replace(' ', 'T')));
}

/** A relative amount (`-7d`) as an interval, for shifting a period (`compare_to`). */
function shiftOf(text: string, attr: string): SQL {
  const m = RELATIVE.exec(text.trim());
  if (!m || m[3]) throw ApiError.validation(attr, `"${text}" is not a relative date such as -1w or -14d.`);
  const [k, unit] = AMOUNT[m[2]!]!;
  const field = unit === 'minutes' ? 'mins' : unit;
  return sql`make_interval(${sql.raw(field)} => ${Number(m[1] ?? 0) * k}::int)`;
}

/** A date of a range as a local-time SQL expression, given `now_local` and the project's `tz`. */
function pointOf(text: string, attr: string): SQL {
  const value = text.trim();
  const m = RELATIVE.exec(value);
  if (m) {
    const unit = UNIT[m[2]!]!;
    const moved = sql`(now_local + ${shiftOf(`${m[1] ?? 0}${m[2]}`, attr)})`;
    if (m[3] === 'Start') return sql`date_trunc(${sql.raw(`'${unit}'`)}, ${moved})`;
    if (m[3] === 'End') {
      return sql`(date_trunc(${sql.raw(`'${unit}'`)}, ${moved}) + interval ${sql.raw(`'1 ${unit}'`)}
        - interval '1 microsecond')`;
    }
    return moved;
  }
  if (ISO_DATE.test(value) && !Number.isNaN(Date.parse(value))) return sql`${value}::timestamp`;
  if (ISO_TIME.test(value) && !Number.isNaN(Date.parse(value.replace(' ', 'T')))) {
    return /([zZ]|[+-]\d{2}:?\d{2})$/.test(value)
      ? sql`(${value}::timestamptz at time zone tz)`
      : sql`${value}::timestamp`;
  }
  throw ApiError.validation(attr, `"${text}" is not a date: use a date, a date-time or a relative date such as -7d.`);
}

/** PostHog widens a range to whole units: minutes for a minute interval, hours for hourly, else days. */
const roundingUnit = (interval: Interval) => (interval === 'minute' ? 'minute' : interval === 'hour' ? 'hour' : 'day');

/** Local wall-clock arithmetic on `YYYY-MM-DD HH:MM:SS` texts, in UTC Date objects (no timezone shifts). */
export const wall = (text: string) => new Date(`${text.slice(0, 19).replace(' ', 'T')}Z`);
export const wallText = (d: Date) => d.toISOString().slice(0, 19).replace('T', ' ');

/** The start of `interval` containing a wall-clock time; weeks start on Sunday (PostHog's default). */
export function bucketStart(d: Date, interval: Interval): Date {
  const out = new Date(d);
  out.setUTCSeconds(0, 0);
  if (interval === 'minute') return out;
  out.setUTCMinutes(0);
  if (interval === 'hour') return out;
  out.setUTCHours(0);
  if (interval === 'day') return out;
  if (interval === 'week') {
    out.setUTCDate(out.getUTCDate() - out.getUTCDay());
    return out;
  }
  out.setUTCDate(1);
  return out;
}

export function nextBucket(d: Date, interval: Interval): Date {
  const out = new Date(d);
  if (interval === 'minute') out.setUTCMinutes(out.getUTCMinutes() + 1);
  else if (interval === 'hour') out.setUTCHours(out.getUTCHours() + 1);
  else if (interval === 'day') out.setUTCDate(out.getUTCDate() + 1);
  else if (interval === 'week') out.setUTCDate(out.getUTCDate() + 7);
  else out.setUTCMonth(out.getUTCMonth() + 1);
  return out;
}

/** The start of the bucket before the one starting at `d`. */
export function previousBucket(d: Date, interval: Interval): Date {
  const out = new Date(d);
  if (interval === 'minute') out.setUTCMinutes(out.getUTCMinutes() - 1);
  else if (interval === 'hour') out.setUTCHours(out.getUTCHours() - 1);
  else if (interval === 'day') out.setUTCDate(out.getUTCDate() - 1);
  else if (interval === 'week') out.setUTCDate(out.getUTCDate() - 7);
  else out.setUTCMonth(out.getUTCMonth() - 1);
  return out;
}

/** A bucket start as the compiler answers it (a date, or a date-time with its offset), as local wall-clock text. */
export const localOf = (answered: string) =>
  answered.length === 10 ? `${answered} 00:00:00` : answered.slice(0, 19).replace('T', ' ');

const STEP_MS: Record<Interval, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 28 * 86_400_000,
};

function bucketsOf(from: string, to: string, interval: Interval): string[] {
  const start = bucketStart(wall(from), interval);
  const end = wall(to);
  const estimate = Math.floor((end.getTime() - start.getTime()) / STEP_MS[interval]) + 1;
  if (estimate > MAX_BUCKETS) {
    throw ApiError.validation(
      'query__interval',
      `This date range and interval make more than ${MAX_BUCKETS} intervals (about ${estimate}). ` +
        'Use a shorter date range or a longer interval.',
    );
  }
  const out: string[] = [];
  for (let d = start; d <= end; d = nextBucket(d, interval)) out.push(wallText(d));
  return out;
}

const FMT = 'YYYY-MM-DD HH24:MI:SS.US';

/**
 * Resolves a query's date range in its project's timezone, as PostHog's QueryDateRange does: `date_from`
 * defaults to `-7d`, `date_to` to now; unless `explicitDate`, both widen to whole days (hours for an hourly
 * interval, minutes for a minute one). `all` starts at the project's first event. With `compare`, the
 * previous period is as long and ends just before this one (or is this one moved by `compare_to`).
 */
export interface RangePlan {
  interval: Interval;
  from: SQL;
  to: SQL;
  prevFrom: SQL;
  prevTo: SQL;
  compare: boolean;
  fromAll: boolean;
}

export function planRange(
  input: DateRangeInput | null | undefined,
  interval: Interval,
  compare?: { compare?: boolean | null; compare_to?: string | null } | null,
): RangePlan {
  const explicit = input?.explicitDate === true;
  const fromText = input?.date_from ?? '-7d';
  const unit = roundingUnit(interval);
  const fromAll = fromText.trim() === 'all';
  const fromRaw = fromAll ? sql`first_local` : pointOf(fromText, 'query__dateRange__date_from');
  const toRaw = input?.date_to ? pointOf(input.date_to, 'query__dateRange__date_to') : sql`now_local`;
  const u = sql.raw(`'${unit}'`);
  const from = explicit ? fromRaw : sql`date_trunc(${u}, ${fromRaw})`;
  const to = explicit
    ? toRaw
    : sql`(date_trunc(${u}, ${toRaw}) + interval ${sql.raw(`'1 ${unit}'`)} - interval '1 microsecond')`;
  const shift = compare?.compare_to ? shiftOf(compare.compare_to, 'query__compareFilter__compare_to') : undefined;
  const prevFrom = shift
    ? sql`f + ${shift}`
    : explicit
      ? sql`f - (t - f) - interval '1 microsecond'`
      : sql`date_trunc(${u}, f - (t - f) - interval '1 microsecond')`;
  const prevTo = shift ? sql`t + ${shift}` : sql`f - interval '1 microsecond'`;
  return { interval, from, to, prevFrom, prevTo, compare: compare?.compare === true, fromAll };
}

/** Runs a range plan for a project: its timezone, bounds and buckets (a 400 when inverted or too fine). */
export async function resolveRange(ex: Executor, teamId: number, plan: RangePlan): Promise<ResolvedRange> {
  const { interval, from, to, prevFrom, prevTo } = plan;
  const first = plan.fromAll
    ? sql`, coalesce((select min(e.timestamp) from events as e where e.project_id = ${teamId})
        at time zone p.timezone, now() at time zone p.timezone) as first_local`
    : sql``;
  // Our own statement (the request's values are parameters), one indexed read of the project's row: it runs
  // straight on the pool, not in a sandboxed transaction of its own as a tenant's query does, which cost the
  // kinds a second transaction's round trips per request.
  const rows = await statementTarget(ex.engine, ex.tag).db.execute(
    sql`select tz, to_char(f, ${FMT}) as f, to_char(t, ${FMT}) as t,
        to_char(${prevFrom}, ${FMT}) as pf, to_char(${prevTo}, ${FMT}) as pt
      from (select tz, ${from} as f, ${to} as t
        from (select p.timezone as tz, (now() at time zone p.timezone) as now_local ${first}
          from projects as p where p.id = ${teamId}) as n) as r`,
  );
  const [row] = rowsOf<{ tz: string; f: string; t: string; pf: string; pt: string }>(rows);
  if (!row) throw ApiError.notFound();
  if (row.f > row.t) {
    throw ApiError.validation('query__dateRange', `The date range starts (${row.f}) after it ends (${row.t}).`);
  }
  const current = { from: row.f, to: row.t, buckets: bucketsOf(row.f, row.t, interval) };
  const previous = plan.compare
    ? { from: row.pf, to: row.pt, buckets: bucketsOf(row.pf, row.pt, interval) }
    : undefined;
  return { timezone: row.tz, interval, current, previous };
}

/** The wall-clock time in `timezone` at the instant `ms`, as the UTC milliseconds of that clock reading. */
export function wallClockAt(ms: number, timezone: string): number {
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(ms));
  const get = (type: string) => Number(f.find((p) => p.type === type)?.value);
  return Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
}

/** The UTC offset of a wall-clock time in a timezone, as `Z` or `±HH:MM`. */
export function offsetOf(localText: string, timezone: string): string {
  const asUtc = wall(localText).getTime();
  const parts = (ms: number) => wallClockAt(ms, timezone);
  // The instant whose local time is `localText`: start from it read as UTC and correct by the offset twice.
  let instant = asUtc - (parts(asUtc) - asUtc);
  instant = asUtc - (parts(instant) - instant);
  const minutes = Math.round((parts(instant) - instant) / 60_000);
  if (minutes === 0) return 'Z';
  const abs = Math.abs(minutes);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${minutes < 0 ? '-' : '+'}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** A local bucket start as PostHog prints it in `action.days`: ISO 8601 with the project's offset. */
export const isoOf = (localText: string, timezone: string) =>
  `${localText.slice(0, 10)}T${localText.slice(11, 19)}${offsetOf(localText, timezone)}`;

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** PostHog's `format_label_date`: `1-Jan-2024`, `1-Jan-2024 13:00` (hour, minute), `Jan 2024` (month). */
export function labelOf(localText: string, interval: Interval): string {
  const d = wall(localText);
  const month = MONTHS[d.getUTCMonth()]!;
  if (interval === 'month') return `${month} ${d.getUTCFullYear()}`;
  const day = `${d.getUTCDate()}-${month}-${d.getUTCFullYear()}`;
  return interval === 'hour' || interval === 'minute' ? `${day} ${localText.slice(11, 16)}` : day;
}

/** PostHog's `days` entry: the date, with the time for hour and minute intervals. */
export const dayOf = (localText: string, interval: Interval) =>
  interval === 'hour' || interval === 'minute' ? localText.slice(0, 19) : localText.slice(0, 10);
