import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { Db, Tx } from '../db/client.js';
import { events, hog_function_versions, person_distinct_ids, persons, projects } from '../db/schema/index.js';
import type { CapturedEvent } from './normalize.js';
import { eachInTurns, jsonSlicesInTurns, mapInTurns, type JsonSlice } from '../core/turns.js';
import { changesPerson, linkedIdOf, PersonPlanner, processesPerson, type PersonState } from './persons.js';
import { knownTaxonomy, type Taxonomy } from './known-taxonomy.js';
import { rowsOf } from '../db/queries/util.js';
import { sqlState } from '../core/sql-state.js';
import { allPipelined } from '../db/pipelined.js';

export interface IngestProject {
  id: number;
  ingested_event: boolean;
  anonymize_ips: boolean;
}

/** The project a capture request's token names, with what its Hog functions need. */
export interface CaptureProject extends IngestProject {
  name: string;
  /** Bumped on every change to the project's Hog functions (0 before the first): their per-process cache's key. */
  hog_functions_version: number;
}

export async function projectByToken(db: Db, token: string): Promise<CaptureProject | undefined> {
  const [row] = await db
    .select({
      id: projects.id,
      name: projects.name,
      ingested_event: projects.ingested_event,
      anonymize_ips: projects.anonymize_ips,
      hog_functions_version: sql<number>`coalesce(${hog_function_versions.version}, 0)::float8`,
    })
    .from(projects)
    .leftJoin(hog_function_versions, eq(hog_function_versions.project_id, projects.id))
    .where(eq(projects.api_token, token))
    .limit(1);
  return row;
}

/** The mapping moved under us (a concurrent merge): start the transaction again. */
class MappingChanged extends Error {
  constructor() {
    super('A concurrent request merged persons of this batch');
  }
}

/**
 * A batch that kept losing to concurrent merges until its deadline. Nothing of it was stored; it
 * carries serialization_failure's SQLSTATE, so the client gets a 503 with Retry-After and retries.
 */
export class IngestContended extends Error {
  readonly code = '40001';
  constructor(cause: unknown) {
    super('The batch kept conflicting with concurrent merges of the same persons; nothing was stored', { cause });
  }
}

// Deadlocks, serialization failures and unique races between concurrent batches resolve on a retry.
const RETRYABLE = new Set(['40P01', '40001', '23505']);
/** Retries go on, with a growing pause, for this long. */
const RETRY_DEADLINE_MS = 5_000;
/** `last_seen_at` is kept to the minute so that a busy event name is not a hot row. */
const LAST_SEEN_GRANULARITY_MS = 60_000;
/** Shared by `ingest_plain_batch` (drizzle/0008), which share-locks persons in the same class. */
export const PERSON_LOCK_CLASS = 727275;
/**
 * About how many characters of JSON one statement carries. postgres.js encodes a statement's
 * parameters in one go on the event loop (a few milliseconds a megabyte, copied several times), so
 * a 20 MiB batch sent as one parameter held every other request for a few hundred milliseconds. A
 * larger batch is sent as several statements in one transaction, still all or nothing.
 */
const STATEMENT_CHARS = 1024 * 1024;

/**
 * Stores a request's events atomically: all of them or none. Events whose uuid is already stored
 * are skipped, so a client's retry changes nothing.
 *
 * Every statement has a fixed text and takes the batch as one JSON parameter, so each is prepared
 * once per connection whatever the batch's size; independent statements are sent together
 * (postgres.js pipelines the queries of a transaction), which keeps a batch to a few round trips.
 * A batch larger than `STATEMENT_CHARS` of JSON goes in slices of about that size, in one transaction.
 */
export async function ingest(db: Db, project: IngestProject, batch: CapturedEvent[], now: Date): Promise<void> {
  const unique = await uniqueByUuid(batch);
  // A batch that only ever needs each distinct id to have a person (no linking, no property
  // changes) is stored by one statement; anything else is replayed on locked persons.
  let replay = false;
  await eachInTurns(unique, (e) => (replay ||= changesPerson(e)));
  const taxonomy = await knownTaxonomy(db).unseen(project.id, unique);
  // The common batch is all new uuids: inserting them plainly lets the unique index check each
  // uuid as it inserts it, where skipping stored ones up front probes each once more. A duplicate
  // (a client's retry, or the same batch arriving twice at once) fails the plain insert, and the
  // batch is then stored again skipping what is there.
  let retried = false;
  const deadline = Date.now() + RETRY_DEADLINE_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      if (replay) await db.transaction((tx) => replayPersons(tx, project, unique, now, retried, taxonomy));
      else await storePlain(db, project, unique, now, retried, taxonomy);
      knownTaxonomy(db).remember(project.id, taxonomy);
      return;
    } catch (err) {
      const state = sqlState(err);
      const retry = err instanceof MappingChanged || RETRYABLE.has(state ?? '');
      if (!retry) throw err;
      if (state === '23505') retried = true;
      if (state === '23505' && attempt === 1) continue;
      // Jittered, growing pauses let the requests that collide take turns.
      const pause = Math.min(500, 5 * 2 ** attempt) * (0.5 + Math.random());
      if (Date.now() + pause > deadline) throw new IngestContended(err);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * After a plain insert failed on a duplicate, the replayed batch is inserted skipping stored uuids
 * (`event_uuids` holds them, unique across the partitions of `events`).
 */
const skipStored = (retried: boolean) => sql.raw(retried ? 'on conflict (project_id, uuid) do nothing' : '');

async function uniqueByUuid(batch: CapturedEvent[]): Promise<CapturedEvent[]> {
  const seen = new Set<string>();
  const unique: CapturedEvent[] = [];
  await eachInTurns(batch, (e) => !seen.has(e.uuid) && (seen.add(e.uuid), unique.push(e)));
  return unique;
}

/**
 * The batch as the JSON arrays the statements below read with `jsonb_to_recordset`, one per
 * statement, written in turns so that a large batch lets other requests through. `n` is the
 * event's place in the whole batch, so slices keep the batch's order.
 */
function eventSlices(
  batch: CapturedEvent[],
  personOf: (e: CapturedEvent, i: number) => number | null | boolean,
): AsyncGenerator<JsonSlice> {
  return jsonSlicesInTurns(
    batch,
    (e, n) => ({
      n,
      uuid: e.uuid,
      event: e.event,
      distinct_id: e.distinct_id,
      properties: e.properties,
      timestamp: e.timestamp,
      elements_chain: e.elements_chain,
      person: personOf(e, n),
    }),
    STATEMENT_CHARS,
  );
}

/** The distinct ids of events that have persons, as a JSON array; a large batch is read in turns. */
async function personIds(batch: readonly CapturedEvent[]): Promise<string> {
  const ids = new Set<string>();
  await eachInTurns(batch, (e) => processesPerson(e) && ids.add(e.distinct_id));
  return JSON.stringify([...ids]);
}

/** Sends a statement at once (a drizzle query runs when awaited); its failure waits for whoever awaits it. */
function started(query: PromiseLike<unknown>): Promise<unknown> {
  const sent = Promise.resolve(query.then((r) => r));
  // Not a swallowed error: the caller awaits `sent`. This only keeps a failure that arrives while
  // the next slice is being written from counting as unhandled.
  sent.catch(() => {});
  return sent;
}

/**
 * One statement per slice after the first, in order: each slice is written while the statement
 * before it runs, and sent once that statement has succeeded, so the first failure is the one
 * the transaction ends with.
 */
async function sendSlices(
  first: JsonSlice,
  rest: AsyncGenerator<JsonSlice>,
  send: (slice: JsonSlice, isFirst: boolean) => PromiseLike<unknown>,
): Promise<void> {
  let pending = started(send(first, true));
  for await (const slice of rest) {
    await pending;
    pending = started(send(slice, false));
  }
  await pending;
}

/**
 * Locks distinct ids in a stable order, so batches that link or change the same people queue
 * instead of overwriting each other.
 */
export function lockIds(tx: Tx, projectId: number, ids: string[]): Promise<unknown> {
  return tx.execute(sql`select pg_advisory_xact_lock(k) from (
      select distinct hashtextextended(${`${projectId}:`}::text || d, 0) as k
      from jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) as d order by k) as locks`);
}

/**
 * Locks the persons of a batch's distinct ids (in id order) against a concurrent merge, and returns
 * them. The mapping is read before the locks are granted, so a later statement that finds an id on
 * a person not in this set saw a merge commit in between, and the batch starts over.
 */
async function lockPersons(tx: Tx, projectId: number, ids: string[]): Promise<Set<number>> {
  const rows = await tx.execute(sql`select person_id, pg_advisory_xact_lock(${PERSON_LOCK_CLASS}::int, person_id) from (
      select distinct ${personOf(projectId, sql`d`)} as person_id
      from jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb) as d order by 1) as locks
    where person_id is not null`);
  return new Set(rowsOf<{ person_id: number }>(rows).map((r) => r.person_id));
}

/**
 * The person of one distinct id, as a lookup by the full primary key: a plan that cannot fall back
 * to scanning the project's links, whatever the statistics say (a new database has none).
 */
const personOf = (projectId: number, distinctId: SQL) =>
  sql`(select link.person_id from person_distinct_ids as link
    where link.project_id = ${projectId} and link.distinct_id = ${distinctId})`;

interface Link {
  distinct_id: string;
  person_id: number;
}

/** Definitions of names seen for the first time, and `last_seen_at` moved on names not seen lately. */
function touchDefinitions(projectId: number, now: Date): SQL {
  const at = now.toISOString();
  const threshold = new Date(now.getTime() - LAST_SEEN_GRANULARITY_MS).toISOString();
  return sql`names as (select distinct event from stored),
    created_definitions as (
      insert into event_definitions (project_id, name, created_at, last_seen_at, updated_at)
      select ${projectId}, event, ${at}::timestamptz, ${at}::timestamptz, ${at}::timestamptz from names order by event
      on conflict (project_id, name) do nothing),
    seen_definitions as (
      update event_definitions set last_seen_at = ${at}::timestamptz
      where project_id = ${projectId} and name in (select event from names)
        and (last_seen_at is null or last_seen_at < ${threshold}::timestamptz))`;
}

const markIngested = (project: IngestProject): SQL =>
  sql`ingested as (update projects set ingested_event = true
      where id = ${project.id} and not ingested_event and ${!project.ingested_event}::boolean)`;

const INPUT_COLUMNS = sql.raw(
  'n int, uuid uuid, event text, distinct_id text, properties jsonb, timestamp timestamptz, elements_chain text',
);

/**
 * The common batch: events that need no more than a person for each distinct id. The database
 * function `ingest_plain_batch` (drizzle/0008) stores it in one statement, which is atomic on its
 * own, so the request takes one round trip and no explicit transaction; it fails with a
 * serialization failure when a concurrent merge moved one of the ids, and the batch is retried.
 */
async function storePlain(
  db: Db,
  project: IngestProject,
  batch: CapturedEvent[],
  now: Date,
  retried: boolean,
  taxonomy: Taxonomy,
): Promise<void> {
  const ids = await personIds(batch);
  const slices = eventSlices(batch, processesPerson);
  const first = (await slices.next()).value as JsonSlice;
  const seenBefore = new Date(now.getTime() - LAST_SEEN_GRANULARITY_MS).toISOString();
  const call = (input: string, sliceIds: string) => sql`select ingest_plain_batch(${project.id}::int, ${input}::jsonb,
    ${sliceIds}::jsonb, ${now.toISOString()}::timestamptz, ${seenBefore}::timestamptz,
    ${!project.ingested_event}::boolean, ${retried}::boolean)`;
  if (first.to === batch.length) {
    // One statement is one transaction: the batch's property definitions are stored with its events.
    await db.execute(sql`${call(first.json, ids)} ${upsertTaxonomy(project.id, taxonomy, sql`,`)}`);
    return;
  }
  await db.transaction(async (tx) => {
    // The first statement share-locks the persons of every id of the batch, in id order, as the
    // single statement does; the later ones lock their own ids' persons again (already held, unless
    // a concurrent request linked an id since) so that each still checks that none has moved.
    await sendSlices(first, slices, (slice, isFirst) =>
      tx.execute(call(slice.json, isFirst ? ids : JSON.stringify(sliceIds(batch, slice)))),
    );
    if (hasTaxonomy(taxonomy)) await tx.execute(upsertTaxonomy(project.id, taxonomy, sql`select`));
  });
}

/** The distinct ids with persons among one slice's events. */
const sliceIds = (batch: CapturedEvent[], slice: JsonSlice) => [
  ...new Set(
    batch
      .slice(slice.from, slice.to)
      .filter(processesPerson)
      .map((e) => e.distinct_id),
  ),
];

/** The call storing a batch's new property definitions (drizzle/0010), or nothing when there are none. */
function upsertTaxonomy(projectId: number, taxonomy: Taxonomy, prefix: SQL): SQL {
  if (!hasTaxonomy(taxonomy)) return sql``;
  return sql`${prefix} upsert_property_definitions(${projectId}::int, ${JSON.stringify(taxonomy.definitions)}::jsonb,
    ${JSON.stringify(taxonomy.links)}::jsonb)`;
}

const hasTaxonomy = (taxonomy: Taxonomy) => taxonomy.definitions.length > 0 || taxonomy.links.length > 0;

interface PersonRow extends Link {
  uuid: string;
  properties: Record<string, unknown>;
  is_identified: boolean;
  created_at: string;
}

/**
 * Batches that link distinct ids or change person properties: the ids (then their persons) are
 * locked alone, and the batch is replayed on them in memory, as PostHog's person processing does.
 */
async function replayPersons(
  tx: Tx,
  project: IngestProject,
  batch: CapturedEvent[],
  now: Date,
  retried: boolean,
  taxonomy: Taxonomy,
): Promise<void> {
  const touched = new Set<string>();
  await eachInTurns(batch, (e) => {
    if (!processesPerson(e)) return;
    touched.add(e.distinct_id);
    const other = linkedIdOf(e);
    if (other) touched.add(other);
  });
  const idList = [...touched];
  const ids = JSON.stringify(idList);
  const [, stored, , locked, rows] = await allPipelined([
    // events and event_uuids have no foreign key (drizzle/0028): the project is checked and locked once.
    tx.execute(sql`select events_lock_project(${project.id}::int)`),
    storedUuids(tx, project.id, batch),
    idList.length ? lockIds(tx, project.id, idList) : undefined,
    idList.length ? lockPersons(tx, project.id, idList) : new Set<number>(),
    idList.length
      ? tx.execute(sql`select m.distinct_id, m.person_id, p.uuid::text as uuid, p.properties, p.is_identified,
            to_json(p.created_at) #>> '{}' as created_at
          from (select d as distinct_id, ${personOf(project.id, sql`d`)} as person_id
                from jsonb_array_elements_text(${ids}::jsonb) as d) as m
          -- one primary-key lookup per person (the limit keeps the planner from making it a join)
          cross join lateral (select uuid, properties, is_identified, created_at
            from persons where id = m.person_id limit 1) as p`)
      : [],
  ]);
  const fresh: CapturedEvent[] = [];
  await eachInTurns(batch, (e) => !stored.has(e.uuid) && fresh.push(e));
  if (!fresh.length) return;

  const people = rowsOf<PersonRow>(rows);
  if (people.some((r) => !locked.has(r.person_id))) throw new MappingChanged();
  const mapping = new Map(people.map((r) => [r.distinct_id, r.person_id]));
  const byId = new Map(
    people.map((r) => [
      r.person_id,
      {
        id: r.person_id,
        uuid: r.uuid,
        properties: r.properties,
        is_identified: r.is_identified,
        created_at: new Date(r.created_at),
      },
    ]),
  );
  const planner = new PersonPlanner(mapping, [...byId.values()]);
  const states = await mapInTurns(fresh, (e) => planner.apply(e));
  await writePersons(tx, project.id, planner);
  const slices = eventSlices(fresh, (_, i) => (states[i] ? PersonPlanner.resolve(states[i]).id! : null));
  const first = (await slices.next()).value as JsonSlice;
  const insert = (input: string, definitions: SQL) => sql`with input as (
      select * from jsonb_to_recordset(${input}::jsonb) as x(${INPUT_COLUMNS}, person int)),
    uuids as (
      insert into event_uuids (project_id, uuid, timestamp)
      select ${project.id}, uuid, timestamp from input
      ${skipStored(retried)}
      returning uuid),
    stored as (
      insert into events (uuid, project_id, event, distinct_id, properties, timestamp, elements_chain, person_id)
      select uuid, ${project.id}, event, distinct_id, properties, timestamp, elements_chain, person
      from input where uuid in (select uuid from uuids) order by n
      returning event),
    ${touchDefinitions(project.id, now)},
    ${markIngested(project)}
    select 1 ${definitions}`;
  if (first.to === fresh.length) {
    await tx.execute(insert(first.json, upsertTaxonomy(project.id, taxonomy, sql`,`)));
    return;
  }
  await sendSlices(first, slices, (slice) => tx.execute(insert(slice.json, sql``)));
  if (hasTaxonomy(taxonomy)) await tx.execute(upsertTaxonomy(project.id, taxonomy, sql`select`));
}

/** The uuids of a batch that are already stored, looked up a slice of the batch at a time. */
async function storedUuids(tx: Tx, projectId: number, batch: CapturedEvent[]): Promise<Set<string>> {
  const stored = new Set<string>();
  for await (const { json } of jsonSlicesInTurns(batch, (e) => e.uuid, STATEMENT_CHARS)) {
    const rows = await tx.execute(sql`select u as uuid from jsonb_array_elements_text(${json}::jsonb) as u
      where exists (select from event_uuids where project_id = ${projectId} and uuid = u::uuid)`);
    for (const r of rowsOf<{ uuid: string }>(rows)) stored.add(r.uuid);
  }
  return stored;
}

async function writePersons(tx: Tx, projectId: number, planner: PersonPlanner): Promise<void> {
  const created = planner.persons.filter((p) => p.isNew && !p.mergedInto);
  if (created.length) {
    const idByUuid = new Map<string, number>();
    const rows = (p: PersonState) => ({
      uuid: p.uuid,
      properties: p.properties,
      is_identified: p.is_identified,
      created_at: p.created_at,
    });
    for await (const { json } of jsonSlicesInTurns(created, rows, STATEMENT_CHARS)) {
      const inserted = rowsOf<{ id: number; uuid: string }>(
        // created_at is the time of the event that created the person, as PostHog's ingestion sets it.
        await tx.execute(sql`insert into persons (uuid, project_id, properties, is_identified, created_at)
          select uuid, ${projectId}, properties, is_identified, coalesce(created_at, now())
          from jsonb_to_recordset(${json}::jsonb)
            as x(uuid uuid, properties jsonb, is_identified boolean, created_at timestamptz)
          returning id, uuid::text as uuid`),
      );
      for (const r of inserted) idByUuid.set(r.uuid, r.id);
    }
    for (const p of created) p.id = idByUuid.get(p.uuid);
  }
  for (const { from, to } of planner.merges) {
    const target = PersonPlanner.resolve(to).id!;
    await tx
      .update(person_distinct_ids)
      .set({ person_id: target })
      .where(and(eq(person_distinct_ids.project_id, projectId), eq(person_distinct_ids.person_id, from.id!)));
    await tx
      .update(events)
      .set({ person_id: target })
      .where(and(eq(events.project_id, projectId), eq(events.person_id, from.id!)));
    await tx.delete(persons).where(and(eq(persons.project_id, projectId), eq(persons.id, from.id!)));
  }
  const links = (link: [string, PersonState]) => ({
    distinct_id: link[0],
    person_id: PersonPlanner.resolve(link[1]).id!,
  });
  for await (const { json } of planner.newLinks.size
    ? jsonSlicesInTurns([...planner.newLinks], links, STATEMENT_CHARS)
    : []) {
    await tx.execute(sql`insert into person_distinct_ids (project_id, distinct_id, person_id)
      select ${projectId}, distinct_id, person_id
      from jsonb_to_recordset(${json}::jsonb) as x(distinct_id text, person_id int)`);
  }
  const changed: PersonState[] = planner.persons.filter((p) => !p.isNew && !p.mergedInto && p.dirty);
  const changes = (p: PersonState) => ({
    id: p.id,
    properties: p.properties,
    is_identified: p.is_identified,
    created_at: p.created_at,
  });
  for await (const { json } of changed.length ? jsonSlicesInTurns(changed, changes, STATEMENT_CHARS) : []) {
    await tx.execute(sql`update persons as p
      set properties = x.properties, is_identified = x.is_identified, updated_at = now(),
        created_at = least(p.created_at, coalesce(x.created_at, p.created_at))
      from jsonb_to_recordset(${json}::jsonb)
        as x(id int, properties jsonb, is_identified boolean, created_at timestamptz)
      where p.id = x.id and p.project_id = ${projectId}`);
  }
}
