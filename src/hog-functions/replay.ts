import { and, desc, eq, gte, lt, sql } from 'drizzle-orm';
import type { PgBoss } from 'pg-boss';
import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import type { Db } from '../db/client.js';
import { events, hog_function_replays } from '../db/schema/index.js';
import { matchesFilters } from './execute.js';
import { filterGlobals, type EventInput } from './globals.js';
import type { HogFunctionRow } from './queries.js';
import { enqueueDeliveries, type QueuedDelivery } from './queue.js';

type Replay = components['schemas']['HogFunctionReplay'];
type ReplayRow = typeof hog_function_replays.$inferSelect;
const PAGE = 1000;
/** The most stored events one replay may read: the request queues them itself, page by page. */
export const MAX_REPLAY_EVENTS = 100_000;

export function serializeReplay(r: ReplayRow): Replay {
  const finished = r.delivered + r.failed;
  return {
    id: r.id,
    date_from: r.date_from.toISOString(),
    date_to: r.date_to.toISOString(),
    status: r.status === 'enqueued' && finished >= r.enqueued ? 'completed' : 'running',
    total: r.total,
    enqueued: r.enqueued,
    delivered: r.delivered,
    failed: r.failed,
    created_at: r.created_at.toISOString(),
  };
}

/**
 * Replays stored events of [from, to) into a destination: each event of the project in the range that
 * matches the function's filters becomes one delivery job on the live queue (each event once, in
 * timestamp order, read in pages by (timestamp, uuid)). Masking is not applied: a replay is asked for.
 */
export async function startReplay(
  db: Db,
  boss: PgBoss,
  retryDelaySeconds: number,
  fn: HogFunctionRow,
  from: Date,
  to: Date,
): Promise<Replay> {
  if (fn.type !== 'destination') throw ApiError.validation('type', 'Only destinations can replay events.');
  if (!(from < to)) throw ApiError.validation('date_to', 'date_to must be after date_from.');
  const inRange = and(eq(events.project_id, fn.project_id), gte(events.timestamp, from), lt(events.timestamp, to));
  const [{ n } = { n: 0 }] = await db.select({ n: sql<number>`count(*)::int` }).from(
    db
      .select({ one: sql`1` })
      .from(events)
      .where(inRange)
      .limit(MAX_REPLAY_EVENTS + 1)
      .as('capped'),
  );
  if (n > MAX_REPLAY_EVENTS)
    throw ApiError.validation('date_to', `The range holds over ${MAX_REPLAY_EVENTS} events: replay it in parts.`);
  const [replay] = await db
    .insert(hog_function_replays)
    .values({ project_id: fn.project_id, hog_function_id: fn.id, date_from: from, date_to: to })
    .returning();
  if (!replay) throw new Error('insert returned nothing');
  let after: { ts: Date; uuid: string } | undefined;
  let total = 0;
  for (;;) {
    const rows = await db
      .select()
      .from(events)
      .where(
        and(inRange, after ? sql`(${events.timestamp}, ${events.uuid}) > (${after.ts}, ${after.uuid})` : undefined),
      )
      .orderBy(events.timestamp, events.uuid)
      .limit(PAGE);
    if (!rows.length) break;
    const jobs: QueuedDelivery[] = [];
    for (const r of rows) {
      const event: EventInput = {
        uuid: r.uuid,
        event: r.event,
        distinct_id: r.distinct_id,
        properties: (r.properties ?? {}) as Record<string, unknown>,
        timestamp: r.timestamp.toISOString(),
        elements_chain: r.elements_chain ?? '',
      };
      if (matchesFilters(fn.filters, filterGlobals(event, null)))
        jobs.push({ function_id: fn.id, project_id: fn.project_id, event, replay_id: replay.id });
    }
    total += jobs.length;
    await enqueueDeliveries(boss, retryDelaySeconds, jobs);
    await db
      .update(hog_function_replays)
      .set({ total, enqueued: total })
      .where(and(eq(hog_function_replays.project_id, replay.project_id), eq(hog_function_replays.id, replay.id)));
    const last = rows[rows.length - 1]!;
    after = { ts: last.timestamp, uuid: last.uuid };
    if (rows.length < PAGE) break;
    // Matching a page runs each event through the filters' bytecode: other requests go between pages.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  const [done] = await db
    .update(hog_function_replays)
    .set({ total, enqueued: total, status: 'enqueued' })
    .where(and(eq(hog_function_replays.project_id, replay.project_id), eq(hog_function_replays.id, replay.id)))
    .returning();
  return serializeReplay(done ?? replay);
}

export async function listReplays(db: Db, fn: HogFunctionRow): Promise<Replay[]> {
  const rows = await db
    .select()
    .from(hog_function_replays)
    .where(and(eq(hog_function_replays.project_id, fn.project_id), eq(hog_function_replays.hog_function_id, fn.id)))
    .orderBy(desc(hog_function_replays.created_at));
  return rows.map(serializeReplay);
}
