import { ApiError } from '../core/errors.js';
import type { Db } from '../db/client.js';
import { readMetrics } from './telemetry.js';

const HOUR = 3_600_000;
const STEP = { hour: HOUR, day: 24 * HOUR, week: 7 * 24 * HOUR } as const;
export type Interval = keyof typeof STEP;

/** `-7d`, `-24h`, `-2w`, `-30m`, or an ISO date. */
function when(value: string | undefined, fallback: Date, attr: string): Date {
  if (!value) return fallback;
  const rel = /^-(\d+)([hdwm])$/.exec(value);
  if (rel) {
    const unit = { h: HOUR, d: 24 * HOUR, w: 7 * 24 * HOUR, m: 30 * 24 * HOUR }[rel[2] as 'h' | 'd' | 'w' | 'm'];
    return valid(new Date(Date.now() - Number(rel[1]) * unit), attr);
  }
  return valid(new Date(value), attr);
}

const EARLIEST = Date.UTC(1900, 0, 1);
const LATEST = Date.UTC(9999, 11, 31);

function valid(d: Date, attr: string): Date {
  const t = d.getTime();
  if (Number.isNaN(t) || t < EARLIEST || t > LATEST) throw ApiError.validation(attr, 'Invalid date.');
  return d;
}

/** More buckets than this is a 400: the series is built in memory, one value per bucket and metric. */
const MAX_BUCKETS = 5_000;

export interface MetricsQuery {
  after?: string;
  before?: string;
  interval?: Interval;
  breakdown_by?: 'name' | 'kind';
}

/** PostHog's app metrics: one series per metric name (or kind), one value per interval bucket. */
export async function metricsSeries(db: Db, fnId: string, q: MetricsQuery) {
  const interval = q.interval ?? 'day';
  const step = STEP[interval];
  const to = when(q.before, new Date(), 'before');
  const from = when(q.after, new Date(to.getTime() - 7 * 24 * HOUR), 'after');
  const start = Math.floor(from.getTime() / step) * step;
  if ((to.getTime() - start) / step > MAX_BUCKETS)
    throw ApiError.validation('after', `The range holds more than ${MAX_BUCKETS} ${interval}s: narrow it.`);
  const buckets: number[] = [];
  for (let b = start; b <= to.getTime(); b += step) buckets.push(b);
  const rows = await readMetrics(db, fnId, new Date(start), to);
  const series = new Map<string, number[]>();
  for (const r of rows) {
    const name = q.breakdown_by === 'kind' ? r.metric_kind : r.metric_name;
    const values = series.get(name) ?? buckets.map(() => 0);
    const i = Math.floor((r.bucket.getTime() - start) / step);
    if (i >= 0 && i < values.length) values[i] = (values[i] ?? 0) + r.count;
    series.set(name, values);
  }
  return {
    labels: buckets.map((b) => new Date(b).toISOString()),
    series: [...series].sort(([a], [b]) => a.localeCompare(b)).map(([name, values]) => ({ name, values })),
  };
}

export async function metricsTotals(db: Db, fnId: string, q: MetricsQuery) {
  const { series } = await metricsSeries(db, fnId, q);
  return { totals: Object.fromEntries(series.map((s) => [s.name, s.values.reduce((a, b) => a + b, 0)])) };
}
