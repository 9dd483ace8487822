import { sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { hog_function_metrics } from '../db/schema/index.js';
import { metricKind, metricBucket, type MetricName } from './telemetry.js';

/** Counts to add, keyed by function id and metric name. */
export type MetricCounts = Map<string, Map<MetricName, number>>;

/**
 * The counters of every capture request of one process, written as one statement at a time: requests that end
 * while a write runs have their counts summed into the next one. Each request's counters are one row per
 * function and metric, the same row for every request in the hour, so concurrent requests writing their own
 * upserts queued on that row's lock, one statement per function per request. A request still answers only
 * after its counts are stored, as before.
 */
class MetricWriter {
  private pending: MetricCounts = new Map();
  private next: Promise<void> | undefined;
  private current: Promise<void> | undefined;

  constructor(private readonly db: Db) {}

  add(counts: MetricCounts): Promise<void> {
    for (const [fnId, names] of counts) {
      const into = this.pending.get(fnId) ?? new Map<MetricName, number>();
      for (const [name, n] of names) into.set(name, (into.get(name) ?? 0) + n);
      this.pending.set(fnId, into);
    }
    this.next ??= this.writeAfterCurrent();
    return this.next;
  }

  private async writeAfterCurrent(): Promise<void> {
    await this.current?.catch(() => undefined);
    const counts = this.pending;
    this.pending = new Map();
    this.next = undefined;
    this.current = writeMetrics(this.db, counts);
    return this.current;
  }
}

/** Adds the counts to their functions' counters of the current hour, in one statement. */
export async function writeMetrics(db: Db, counts: MetricCounts, at = new Date()): Promise<void> {
  const bucket = metricBucket(at);
  const rows = [...counts].flatMap(([hog_function_id, names]) =>
    [...names]
      .filter(([, count]) => count > 0)
      .map(([metric_name, count]) => ({
        hog_function_id,
        bucket,
        metric_kind: metricKind(metric_name),
        metric_name,
        count,
      })),
  );
  if (!rows.length) return;
  await db
    .insert(hog_function_metrics)
    .values(rows)
    .onConflictDoUpdate({
      target: [hog_function_metrics.hog_function_id, hog_function_metrics.bucket, hog_function_metrics.metric_name],
      set: { count: sql`${hog_function_metrics.count} + excluded.count` },
    });
}

/** One writer per database handle (a process holds one; tests that open several get one each). */
const writers = new WeakMap<Db, MetricWriter>();

export function addMetrics(db: Db, counts: MetricCounts): Promise<void> {
  let writer = writers.get(db);
  if (!writer) writers.set(db, (writer = new MetricWriter(db)));
  return writer.add(counts);
}
