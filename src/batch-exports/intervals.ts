/** Export intervals and their grid in UTC: hour starts, day starts, Monday week starts, 5/15-minute marks. */
export const INTERVALS = ['hour', 'day', 'week', 'every 5 minutes', 'every 15 minutes'] as const;
export type Interval = (typeof INTERVALS)[number];

const MINUTE = 60_000;
const LENGTHS: Record<Interval, number> = {
  hour: 60 * MINUTE,
  day: 24 * 60 * MINUTE,
  week: 7 * 24 * 60 * MINUTE,
  'every 5 minutes': 5 * MINUTE,
  'every 15 minutes': 15 * MINUTE,
};
// 1970-01-01 was a Thursday; weeks start on Monday 1970-01-05.
const WEEK_ORIGIN = 4 * 24 * 60 * MINUTE;

export function intervalMs(interval: string): number {
  const ms = LENGTHS[interval as Interval];
  if (!ms) throw new Error(`Unknown interval ${interval}`);
  return ms;
}

export function floorToGrid(at: Date, interval: string): Date {
  const ms = intervalMs(interval);
  const origin = interval === 'week' ? WEEK_ORIGIN : 0;
  return new Date(Math.floor((at.getTime() - origin) / ms) * ms + origin);
}

export function ceilToGrid(at: Date, interval: string): Date {
  const floor = floorToGrid(at, interval);
  return floor.getTime() === at.getTime() ? floor : new Date(floor.getTime() + intervalMs(interval));
}

export interface DataInterval {
  start: Date;
  end: Date;
}

/** The grid intervals covering [start, end), at most `limit` of them. */
export function intervalsBetween(start: Date, end: Date, interval: string, limit = Infinity): DataInterval[] {
  const ms = intervalMs(interval);
  const out: DataInterval[] = [];
  for (let s = floorToGrid(start, interval).getTime(); s < end.getTime() && out.length < limit; s += ms) {
    out.push({ start: new Date(s), end: new Date(s + ms) });
  }
  return out;
}

/**
 * The intervals a schedule owes at `now`: those ending after `from` (exclusive) and by `now`, within
 * the export's `start_at`/`end_at` (no run is triggered before `start_at` or after `end_at`).
 */
export function dueIntervals(
  opts: { from: Date; now: Date; interval: string; start_at: Date | null; end_at: Date | null },
  limit = 1000,
): DataInterval[] {
  const ms = intervalMs(opts.interval);
  let firstEnd = floorToGrid(opts.from, opts.interval).getTime() + ms;
  if (opts.start_at) firstEnd = Math.max(firstEnd, ceilToGrid(opts.start_at, opts.interval).getTime() + ms);
  const lastEnd = Math.min(opts.now.getTime(), opts.end_at ? opts.end_at.getTime() : Infinity);
  const out: DataInterval[] = [];
  for (let e = firstEnd; e <= lastEnd && out.length < limit; e += ms)
    out.push({ start: new Date(e - ms), end: new Date(e) });
  return out;
}
