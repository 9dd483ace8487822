import { gzipSync } from 'node:zlib';
import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../../src/db/client.js';
import { event_definitions, events, person_distinct_ids, persons } from '../../src/db/schema/index.js';
import type { OperationId } from '../../src/http/types.js';
import type { CallResult, TestContext } from './app.js';

export type RawEvent = Record<string, unknown>;

/** Sends a batch the way posthog-node does (gzip JSON to /batch/) and fails unless it was stored. */
export async function capture(ctx: TestContext, token: string, batch: RawEvent[], extra: RawEvent = {}): Promise<void> {
  const res = await send(ctx, 'capture_batch_create', {
    body: gzipSync(JSON.stringify({ api_key: token, batch, ...extra })),
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
  });
  if (res.status !== 200) throw new Error(`capture failed: ${res.status} ${res.raw}`);
}

/** A raw capture request through the contract check. */
export function send(
  ctx: TestContext,
  operationId: Extract<OperationId, `capture_${string}`>,
  opts: { body: string | Buffer; headers?: Record<string, string>; query?: Record<string, string> },
): Promise<CallResult> {
  return ctx.call(operationId, { payload: opts.body, headers: opts.headers ?? {}, query: opts.query });
}

export async function storedEvents(db: Db, projectId: number) {
  return db.select().from(events).where(eq(events.project_id, projectId)).orderBy(asc(events.id));
}

export async function personOf(db: Db, projectId: number, distinctId: string) {
  const [link] = await db
    .select()
    .from(person_distinct_ids)
    .where(and(eq(person_distinct_ids.project_id, projectId), eq(person_distinct_ids.distinct_id, distinctId)));
  if (!link) return undefined;
  const [person] = await db.select().from(persons).where(eq(persons.id, link.person_id));
  return person;
}

export async function definitions(db: Db, projectId: number) {
  return db
    .select()
    .from(event_definitions)
    .where(eq(event_definitions.project_id, projectId))
    .orderBy(asc(event_definitions.name));
}

export const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The tenant wall of a query-kind test: each batch captured into the project under test, then twice more into
 * another project under other distinct ids (prefixed `b-` and `c-`, aliases too), none of which may count.
 * The twins' events carry no other properties unless `keepProperties` (paths name steps by them).
 */
export async function captureWithTwins(
  ctx: TestContext,
  ours: string,
  theirs: string,
  batches: Record<string, any>[][],
  { keepProperties = false } = {},
): Promise<void> {
  for (const batch of batches) await capture(ctx, ours, batch);
  for (const prefix of ['b-', 'c-']) {
    const rename = (e: Record<string, any>) => ({
      ...e,
      distinct_id: prefix + e.distinct_id,
      properties: {
        ...(keepProperties ? e.properties : {}),
        ...(e.properties.$anon_distinct_id ? { $anon_distinct_id: prefix + e.properties.$anon_distinct_id } : {}),
      },
    });
    for (const batch of batches) await capture(ctx, theirs, batch.map(rename));
  }
}
