import { and, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../client.js';
import { event_definitions, events, person_distinct_ids, persons, projects } from '../schema/index.js';
import type { CapturedEvent } from '../../capture/normalize.js';
import { linkedIdOf, PersonPlanner, processesPerson, type PersonState } from '../../capture/persons.js';
import { sqlState } from './util.js';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface IngestProject {
  id: number;
  ingested_event: boolean;
  anonymize_ips: boolean;
}

export async function projectByToken(db: Db, token: string): Promise<IngestProject | undefined> {
  const [row] = await db
    .select({ id: projects.id, ingested_event: projects.ingested_event, anonymize_ips: projects.anonymize_ips })
    .from(projects)
    .where(eq(projects.api_token, token))
    .limit(1);
  return row;
}

/** The mapping moved under us (a concurrent merge): start the transaction again. */
class MappingChanged extends Error {}

// Deadlocks, serialization failures and unique races between concurrent batches resolve on a retry.
const RETRYABLE = new Set(['40P01', '40001', '23505']);
const ATTEMPTS = 5;
const INSERT_CHUNK = 1000;
/** `last_seen_at` is kept to the minute so that a busy event name is not a hot row. */
const LAST_SEEN_GRANULARITY_MS = 60_000;
const PERSON_LOCK_CLASS = 727275;

/**
 * Stores a request's events in one transaction: all of them or none. Events whose uuid is already
 * stored are skipped, so a client's retry changes nothing.
 */
export async function ingest(db: Db, project: IngestProject, batch: CapturedEvent[], now: Date): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.transaction((tx) => ingestOnce(tx, project, batch, now));
      return;
    } catch (err) {
      const retry = err instanceof MappingChanged || RETRYABLE.has(sqlState(err) ?? '');
      if (!retry || attempt >= ATTEMPTS) throw err;
    }
  }
}

async function ingestOnce(tx: Tx, project: IngestProject, batch: CapturedEvent[], now: Date): Promise<void> {
  const stored = await storedUuids(tx, project.id, batch.map((e) => e.uuid));
  const seen = new Set(stored);
  const fresh = batch.filter((e) => !seen.has(e.uuid) && (seen.add(e.uuid), true));
  if (!fresh.length) return;

  const personOf = await processPersons(tx, project.id, fresh);
  await touchDefinitions(tx, project.id, fresh, now);
  for (let i = 0; i < fresh.length; i += INSERT_CHUNK) {
    const rows = fresh.slice(i, i + INSERT_CHUNK).map((e, j) => ({
      uuid: e.uuid,
      project_id: project.id,
      event: e.event,
      distinct_id: e.distinct_id,
      properties: e.properties,
      timestamp: e.timestamp,
      elements_chain: e.elements_chain,
      person_id: personOf[i + j] ?? null,
    }));
    await tx.insert(events).values(rows).onConflictDoNothing({ target: [events.project_id, events.uuid] });
  }
  if (!project.ingested_event) {
    await tx.update(projects).set({ ingested_event: true }).where(and(eq(projects.id, project.id), eq(projects.ingested_event, false)));
  }
}

async function storedUuids(tx: Tx, projectId: number, uuids: string[]): Promise<string[]> {
  const found: string[] = [];
  for (let i = 0; i < uuids.length; i += INSERT_CHUNK) {
    const rows = await tx
      .select({ uuid: events.uuid })
      .from(events)
      .where(and(eq(events.project_id, projectId), inArray(events.uuid, uuids.slice(i, i + INSERT_CHUNK))));
    for (const r of rows) found.push(r.uuid);
  }
  return found;
}

async function distinctIdMapping(tx: Tx, projectId: number, ids: string[]): Promise<Map<string, number>> {
  const rows = ids.length
    ? await tx
        .select({ distinct_id: person_distinct_ids.distinct_id, person_id: person_distinct_ids.person_id })
        .from(person_distinct_ids)
        .where(and(eq(person_distinct_ids.project_id, projectId), inArray(person_distinct_ids.distinct_id, ids)))
    : [];
  return new Map(rows.map((r) => [r.distinct_id, r.person_id]));
}

/**
 * Locks the batch's distinct ids (then their persons) in sorted order, so concurrent batches about
 * the same people queue instead of overwriting each other, and replays the batch on them. Returns
 * each event's person id (null for events that opt out of person processing).
 */
async function processPersons(tx: Tx, projectId: number, batch: CapturedEvent[]): Promise<(number | null)[]> {
  const ids = new Set<string>();
  for (const e of batch) {
    if (!processesPerson(e)) continue;
    ids.add(e.distinct_id);
    const other = linkedIdOf(e);
    if (other) ids.add(other);
  }
  if (!ids.size) return batch.map(() => null);
  const idList = [...ids];
  await tx.execute(sql`select pg_advisory_xact_lock(k) from (
      select distinct hashtextextended(${`${projectId}:`}::text || d, 0) as k
      from jsonb_array_elements_text(${JSON.stringify(idList)}::jsonb) as d order by k) as locks`);
  const mapping = await distinctIdMapping(tx, projectId, idList);
  const personIds = [...new Set(mapping.values())].sort((a, b) => a - b);
  if (personIds.length) {
    await tx.execute(sql`select pg_advisory_xact_lock(${PERSON_LOCK_CLASS}::int, id) from (
        select (jsonb_array_elements_text(${JSON.stringify(personIds)}::jsonb))::int as id order by 1) as locks`);
    const again = await distinctIdMapping(tx, projectId, idList);
    if (again.size !== mapping.size || [...again].some(([d, p]) => mapping.get(d) !== p)) throw new MappingChanged();
  }
  const rows = personIds.length
    ? await tx
        .select({ id: persons.id, uuid: persons.uuid, properties: persons.properties, is_identified: persons.is_identified })
        .from(persons)
        .where(inArray(persons.id, personIds))
    : [];

  const planner = new PersonPlanner(mapping, rows);
  const states = batch.map((e) => planner.apply(e));
  await writePersons(tx, projectId, planner);
  return states.map((s) => (s ? PersonPlanner.resolve(s).id! : null));
}

async function writePersons(tx: Tx, projectId: number, planner: PersonPlanner): Promise<void> {
  const created = planner.persons.filter((p) => p.isNew && !p.mergedInto);
  if (created.length) {
    const inserted = await tx
      .insert(persons)
      .values(created.map((p) => ({ uuid: p.uuid, project_id: projectId, properties: p.properties, is_identified: p.is_identified })))
      .returning({ id: persons.id, uuid: persons.uuid });
    const idByUuid = new Map(inserted.map((r) => [r.uuid, r.id]));
    for (const p of created) p.id = idByUuid.get(p.uuid);
  }
  for (const { from, to } of planner.merges) {
    const target = PersonPlanner.resolve(to).id!;
    await tx.update(person_distinct_ids).set({ person_id: target }).where(eq(person_distinct_ids.person_id, from.id!));
    await tx
      .update(events)
      .set({ person_id: target })
      .where(and(eq(events.project_id, projectId), eq(events.person_id, from.id!)));
    await tx.delete(persons).where(eq(persons.id, from.id!));
  }
  if (planner.newLinks.size) {
    await tx.insert(person_distinct_ids).values(
      [...planner.newLinks].map(([distinct_id, p]) => ({ project_id: projectId, distinct_id, person_id: PersonPlanner.resolve(p).id! })),
    );
  }
  const changed: PersonState[] = planner.persons.filter((p) => !p.isNew && !p.mergedInto && p.dirty);
  if (changed.length) {
    const payload = JSON.stringify(changed.map((p) => ({ id: p.id, properties: p.properties, is_identified: p.is_identified })));
    await tx.execute(sql`update persons as p
      set properties = x.properties, is_identified = x.is_identified, updated_at = now()
      from jsonb_to_recordset(${payload}::jsonb) as x(id int, properties jsonb, is_identified boolean)
      where p.id = x.id`);
  }
}

/** Creates the definitions of names seen for the first time and moves `last_seen_at` forward. */
async function touchDefinitions(tx: Tx, projectId: number, batch: CapturedEvent[], now: Date): Promise<void> {
  const names = [...new Set(batch.map((e) => e.event))].sort();
  const existing = await tx
    .select({ name: event_definitions.name, last_seen_at: event_definitions.last_seen_at })
    .from(event_definitions)
    .where(and(eq(event_definitions.project_id, projectId), inArray(event_definitions.name, names)));
  const known = new Map(existing.map((r) => [r.name, r.last_seen_at]));
  const missing = names.filter((n) => !known.has(n));
  if (missing.length) {
    await tx
      .insert(event_definitions)
      .values(missing.map((name) => ({ project_id: projectId, name, created_at: now, last_seen_at: now, updated_at: now })))
      .onConflictDoNothing({ target: [event_definitions.project_id, event_definitions.name] });
  }
  const threshold = new Date(now.getTime() - LAST_SEEN_GRANULARITY_MS);
  const stale = names.filter((n) => known.has(n) && (!known.get(n) || known.get(n)! < threshold));
  if (stale.length) {
    await tx
      .update(event_definitions)
      .set({ last_seen_at: now })
      .where(
        and(
          eq(event_definitions.project_id, projectId),
          inArray(event_definitions.name, stale),
          or(isNull(event_definitions.last_seen_at), lt(event_definitions.last_seen_at, threshold)),
        ),
      );
  }
}
