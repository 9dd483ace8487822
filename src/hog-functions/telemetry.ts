import { and, desc, eq, gte, ilike, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { hog_function_logs, hog_function_masks, hog_function_metrics } from '../db/schema/index.js';
import type { LogLine } from './execute.js';

export type MetricName = 'succeeded' | 'failed' | 'filtered' | 'masked' | 'dropped';
const KIND: Record<MetricName, string> = {
  succeeded: 'success',
  failed: 'failure',
  filtered: 'other',
  masked: 'other',
  dropped: 'other',
};
/** Logs and metrics are kept this long, then deleted by `expireTelemetry`. */
export const TELEMETRY_RETENTION_DAYS = 14;
const HOUR = 3_600_000;

export async function writeLogs(
  db: Db,
  fn: { id: string; project_id: number },
  instanceId: string,
  lines: LogLine[],
): Promise<void> {
  await writeLogBatch(db, fn, [{ instance: instanceId, lines }]);
}

/**
 * The lines of many invocations of one function in one statement: the rows travel as one JSON parameter
 * (a delivery job writes two or more lines for each of its events, and building a parameter for every
 * field of every row cost more CPU than the deliveries' requests).
 */
export async function writeLogBatch(
  db: Db,
  fn: { id: string; project_id: number },
  invocations: { instance: string; lines: LogLine[] }[],
): Promise<void> {
  const rows = invocations.flatMap(({ instance, lines }) =>
    lines.map((l) => ({
      i: instance,
      l: l.level,
      // PostgreSQL's text cannot hold NUL.
      m: l.message.slice(0, 10_000).replaceAll('\u0000', ''),
      t: l.timestamp.toISOString(),
    })),
  );
  if (!rows.length) return;
  await db.execute(sql`
    insert into ${hog_function_logs} (project_id, hog_function_id, instance_id, level, message, timestamp)
    select ${fn.project_id}::int, ${fn.id}::uuid, r.i, r.l, r.m, r.t
    from json_to_recordset(${JSON.stringify(rows)}::json) as r(i text, l text, m text, t timestamptz)`);
}

/** Counts to add, keyed by function id and metric name. */
export type MetricCounts = Map<string, Map<MetricName, number>>;

/** Adds the counts to their functions' counters of the hour of `at`, in one statement. */
export async function writeMetrics(db: Db, counts: MetricCounts, at = new Date()): Promise<void> {
  const bucket = new Date(Math.floor(at.getTime() / HOUR) * HOUR);
  const rows = [...counts].flatMap(([hog_function_id, names]) =>
    [...names]
      .filter(([, count]) => count > 0)
      .map(([metric_name, count]) => ({ hog_function_id, bucket, metric_kind: KIND[metric_name], metric_name, count })),
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

/** Adds to a function's counter of the current hour. */
export const addMetric = (db: Db, fnId: string, name: MetricName, count = 1, at = new Date()) =>
  writeMetrics(db, new Map([[fnId, new Map([[name, count]])]]), at);

export interface LogQuery {
  limit: number;
  after?: string;
  before?: string;
  instance_id?: string;
  levels?: string[];
  search?: string;
}

export async function readLogs(db: Db, projectId: number, fnId: string, q: LogQuery) {
  const conds: SQL[] = [eq(hog_function_logs.project_id, projectId), eq(hog_function_logs.hog_function_id, fnId)];
  if (q.after) conds.push(gte(hog_function_logs.timestamp, new Date(q.after)));
  if (q.before) conds.push(lt(hog_function_logs.timestamp, new Date(q.before)));
  if (q.instance_id) conds.push(eq(hog_function_logs.instance_id, q.instance_id));
  if (q.levels?.length) conds.push(inArray(hog_function_logs.level, q.levels));
  if (q.search) conds.push(ilike(hog_function_logs.message, `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`));
  return db
    .select()
    .from(hog_function_logs)
    .where(and(...conds))
    .orderBy(desc(hog_function_logs.timestamp), desc(hog_function_logs.id))
    .limit(q.limit);
}

export async function readMetrics(db: Db, fnId: string, from: Date, to: Date) {
  return db
    .select()
    .from(hog_function_metrics)
    .where(
      and(
        eq(hog_function_metrics.hog_function_id, fnId),
        gte(hog_function_metrics.bucket, from),
        lt(hog_function_metrics.bucket, to),
      ),
    );
}

/**
 * PostHog's masking: the hash of an event (its `hash` template) lets the first event through in each
 * `ttl` window and counts the others; with a `threshold`, every threshold-th one passes too. Answers
 * whether this event goes on.
 */
export async function passesMask(db: Db, fnId: string, hash: string, ttl: number, threshold: number | null) {
  const rows = (await db.execute(sql`
    insert into ${hog_function_masks} (hog_function_id, hash, expires_at, count)
    values (${fnId}, ${hash}, now() + make_interval(secs => ${ttl}), 1)
    on conflict (hog_function_id, hash) do update set
      count = case when ${hog_function_masks.expires_at} < now() then 1 else ${hog_function_masks.count} + 1 end,
      expires_at = case when ${hog_function_masks.expires_at} < now()
        then now() + make_interval(secs => ${ttl}) else ${hog_function_masks.expires_at} end
    returning count`)) as unknown as { count: number }[];
  const count = Number(rows[0]?.count ?? 1);
  return count === 1 || (threshold != null && threshold > 0 && (count - 1) % threshold === 0);
}

/** Deletes logs, metrics and masks past their time. */
export async function expireTelemetry(db: Db): Promise<void> {
  const cutoff = new Date(Date.now() - TELEMETRY_RETENTION_DAYS * 24 * HOUR);
  await db.delete(hog_function_logs).where(lt(hog_function_logs.timestamp, cutoff));
  await db.delete(hog_function_metrics).where(lt(hog_function_metrics.bucket, cutoff));
  await db.delete(hog_function_masks).where(lt(hog_function_masks.expires_at, new Date()));
}
