import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/client.js';
import { event_uuids, events, person_distinct_ids, persons } from '../../src/db/schema/index.js';

export interface TestEvent {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  timestamp: Date;
  elements_chain?: string;
  person_id?: number | null;
}

/** Events as ingestion would store them (with their uuids in event_uuids), inserted directly. */
export async function insertEvents(db: Db, projectId: number, rows: Partial<TestEvent>[]): Promise<TestEvent[]> {
  const full = rows.map((r, i) => ({
    uuid: r.uuid ?? randomUUID(),
    event: r.event ?? '$pageview',
    distinct_id: r.distinct_id ?? `user-${i % 7}`,
    properties: r.properties ?? { $browser: i % 2 ? 'Firefox' : 'Chrome', n: i },
    timestamp: r.timestamp ?? new Date(),
    elements_chain: r.elements_chain ?? '',
    person_id: r.person_id ?? null,
  }));
  for (let i = 0; i < full.length; i += 1000) {
    const slice = full.slice(i, i + 1000);
    await db.insert(events).values(slice.map((e) => ({ ...e, project_id: projectId })));
    // Ingestion keeps every stored uuid in event_uuids (unique per project across the partitions).
    await db
      .insert(event_uuids)
      .values(slice.map((e) => ({ project_id: projectId, uuid: e.uuid, timestamp: e.timestamp })));
  }
  return full;
}

/** `count` events spread evenly over [start, end), named and numbered so each can be recognised. */
export function spread(
  count: number,
  start: Date,
  end: Date,
  extra: (i: number) => Partial<TestEvent> = () => ({}),
): Partial<TestEvent>[] {
  const step = (end.getTime() - start.getTime()) / count;
  return Array.from({ length: count }, (_, i) => ({
    timestamp: new Date(start.getTime() + Math.floor(i * step)),
    properties: { $browser: i % 2 ? 'Firefox' : 'Chrome', n: i },
    ...extra(i),
  }));
}

export async function insertPerson(
  db: Db,
  projectId: number,
  distinctIds: string[],
  properties: Record<string, unknown> = {},
  updatedAt = new Date(),
): Promise<{ id: number; uuid: string }> {
  const [person] = await db
    .insert(persons)
    .values({ project_id: projectId, properties, updated_at: updatedAt, created_at: updatedAt })
    .returning();
  await db
    .insert(person_distinct_ids)
    .values(distinctIds.map((d) => ({ project_id: projectId, distinct_id: d, person_id: person!.id })));
  return { id: person!.id, uuid: person!.uuid };
}
