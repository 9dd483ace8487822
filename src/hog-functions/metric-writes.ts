import type { Db } from '../db/client.js';
import { writeMetrics, type MetricCounts, type MetricName } from './telemetry.js';

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
    this.current = writeMetrics(this.db, counts).catch(() => this.eachApart(counts));
    return this.current;
  }

  /**
   * The counts of one write are many projects' functions: when the write fails (a function deleted meanwhile
   * with its project), each function's counts are written apart, so one project's deletion loses no other's.
   */
  private async eachApart(counts: MetricCounts): Promise<void> {
    for (const [fnId, names] of counts) await writeMetrics(this.db, new Map([[fnId, names]])).catch(() => undefined);
  }
}

/** One writer per database handle (a process holds one; tests that open several get one each). */
const writers = new WeakMap<Db, MetricWriter>();

export function addMetrics(db: Db, counts: MetricCounts): Promise<void> {
  let writer = writers.get(db);
  if (!writer) writers.set(db, (writer = new MetricWriter(db)));
  return writer.add(counts);
}
