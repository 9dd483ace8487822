import { randomUUID } from 'node:crypto';
import { eq, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { filterSql } from '../events/queries.js';
import { lockIds, PERSON_LOCK_CLASS } from '../capture/ingest.js';
import { isoTimestamp, rowsOf } from '../db/queries/util.js';
import { sqlState } from '../core/sql-state.js';
import type { FilterNode } from '../events/filters.js';
import { query_cache } from '../db/schema/index.js';
import { logPersonActivity, personChange } from './activity.js';

type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface PersonRow {
  id: number;
  uuid: string;
  properties: Record<string, unknown>;
  created_at: string;
  distinct_ids: string[];
}

export interface PersonFilters {
  distinctId?: string;
  email?: string;
  search?: string;
  /** Person-property filters only. */
  properties?: FilterNode;
}

/** A person as a row: its distinct ids in a stable order (the table keeps no insertion order). */
const PERSON_FIELDS = sql.raw(`persons.id, persons.uuid::text as uuid, persons.properties,
  persons.created_at::text as created_at,
  array(select link.distinct_id from person_distinct_ids as link
        where link.project_id = persons.project_id and link.person_id = persons.id
        order by link.distinct_id) as distinct_ids`);

const mapRow = (r: PersonRow): PersonRow => ({ ...r, created_at: isoTimestamp(r.created_at) });

const hasDistinctId = (projectId: number, distinctId: SQL | string) =>
  sql`exists (select from person_distinct_ids as link where link.project_id = ${projectId}
    and link.person_id = persons.id and link.distinct_id = ${distinctId})`;

function whereOf(projectId: number, f: PersonFilters): SQL {
  const parts: SQL[] = [sql`persons.project_id = ${projectId}`];
  if (f.distinctId !== undefined) parts.push(hasDistinctId(projectId, f.distinctId));
  if (f.email !== undefined) parts.push(sql`persons.properties ->> 'email' = ${f.email}`);
  if (f.search !== undefined && f.search !== '') {
    const pattern = `%${f.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(f.search)
      ? sql` or persons.uuid = ${f.search.toLowerCase()}::uuid`
      : sql``;
    parts.push(sql`(coalesce(persons.properties ->> 'email' ilike ${pattern}, false)
      or coalesce(persons.properties ->> 'name' ilike ${pattern}, false)
      or ${hasDistinctId(projectId, f.search)}${uuid})`);
  }
  if (f.properties) parts.push(filterSql(f.properties));
  return sql.join(parts, sql` and `);
}

export async function listPersons(
  db: Db,
  projectId: number,
  filters: PersonFilters,
  page: { limit: number; offset: number },
): Promise<{ count: number; rows: PersonRow[] }> {
  const where = whereOf(projectId, filters);
  const [rows, counted] = await Promise.all([
    db.execute(sql`select ${PERSON_FIELDS} from persons where ${where}
      order by persons.created_at desc, persons.id desc limit ${page.limit} offset ${page.offset}`),
    db.execute(sql`select count(*)::int as n from persons where ${where}`),
  ]);
  return { count: rowsOf<{ n: number }>(counted)[0]?.n ?? 0, rows: rowsOf<PersonRow>(rows).map(mapRow) };
}

/** The project's person by numeric id or uuid (the caller has told the two apart). */
export async function getPerson(
  db: Db | Tx,
  projectId: number,
  key: { id: number } | { uuid: string },
): Promise<PersonRow | undefined> {
  const match = 'id' in key ? sql`persons.id = ${key.id}` : sql`persons.uuid = ${key.uuid}::uuid`;
  const rows = await db.execute(sql`select ${PERSON_FIELDS} from persons
    where persons.project_id = ${projectId} and ${match}`);
  return rowsOf<PersonRow>(rows).map(mapRow)[0];
}

export interface IngestTarget {
  id: number;
  ingested_event: boolean;
  anonymize_ips: boolean;
}

/** The project as ingestion needs it, for the events that change a person's properties. */
export async function ingestProject(db: Db, projectId: number): Promise<IngestTarget | undefined> {
  const rows = await db.execute(sql`select id, ingested_event, anonymize_ips from projects where id = ${projectId}`);
  return rowsOf<IngestTarget>(rows)[0];
}

/**
 * Takes the locks ingestion takes to change these persons: their distinct ids (as read now), then
 * the persons themselves, exclusively, in id order. A batch that would add events to one of them
 * waits for this transaction and then finds no person for the id (and makes a new one); a batch
 * that got there first has committed before the locks are granted, so its events are seen below.
 * Returns the persons that still exist once the locks are held (a merge may have absorbed one).
 */
async function lockPersons(tx: Tx, projectId: number, personIds: number[]): Promise<number[]> {
  if (!personIds.length) return [];
  const ids = rowsOf<{ distinct_id: string }>(
    await tx.execute(sql`select distinct_id from person_distinct_ids
      where project_id = ${projectId} and person_id = any(${sql.param(personIds)}::int[])`),
  ).map((r) => r.distinct_id);
  if (ids.length) await lockIds(tx, projectId, ids);
  await tx.execute(sql`select pg_advisory_xact_lock(${PERSON_LOCK_CLASS}::int, id)
    from unnest(${sql.param(personIds)}::int[]) as id order by id`);
  const alive = await tx.execute(sql`select id from persons
    where project_id = ${projectId} and id = any(${sql.param(personIds)}::int[])`);
  return rowsOf<{ id: number }>(alive).map((r) => r.id);
}

// A deadlock or serialization failure against concurrent ingestion resolves on a retry: ingestion
// holds person locks while it waits on definitions rows another batch holds, and that batch may wait
// on the distinct ids this transaction locked. Ingestion retries the same way.
const RETRYABLE = new Set(['40P01', '40001']);
const RETRY_DEADLINE_MS = 10_000;

/** Runs `work` in a transaction, again after a deadlock, with growing jittered pauses, until a deadline. */
async function lockedTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  const deadline = Date.now() + RETRY_DEADLINE_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (err) {
      const pause = Math.min(500, 5 * 2 ** attempt) * (0.5 + Math.random());
      if (!RETRYABLE.has(sqlState(err) ?? '') || Date.now() + pause > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** Every event of these persons: by person, and every event of their distinct ids (also those without a person). */
/**
 * A deletion leaves every read path at once, cached query answers included: the project's cached answers
 * (computed from rows that are now gone) are dropped in the deleting transaction, and recomputed on demand.
 */
async function forgetCachedAnswers(tx: Tx, projectId: number): Promise<void> {
  await tx.delete(query_cache).where(eq(query_cache.project_id, projectId));
}

async function deleteEventsOf(tx: Tx, projectId: number, personIds: number[]): Promise<number> {
  const deleted = await tx.execute(sql`with ids as (
      select distinct_id from person_distinct_ids
      where project_id = ${projectId} and person_id = any(${sql.param(personIds)}::int[])),
    gone as (
      delete from events where project_id = ${projectId}
        and (person_id = any(${sql.param(personIds)}::int[]) or distinct_id in (select distinct_id from ids))
      returning uuid),
    -- A deleted event's uuid may be sent again, and is then stored again.
    forgotten as (
      delete from event_uuids where project_id = ${projectId} and uuid in (select uuid from gone))
    select count(*)::int as n from gone`);
  return rowsOf<{ n: number }>(deleted)[0]?.n ?? 0;
}

/**
 * Deletes persons (their distinct ids go with them) and, when asked, all their events, in one
 * transaction under ingestion's locks. Returns how many persons were deleted.
 */
export async function deletePersons(
  db: Db,
  projectId: number,
  personIds: number[],
  withEvents: boolean,
  userId: number | null,
): Promise<number> {
  return lockedTransaction(db, async (tx) => {
    const alive = await lockPersons(tx, projectId, [...new Set(personIds)]);
    if (!alive.length) return 0;
    if (withEvents) await deleteEventsOf(tx, projectId, alive);
    const gone = rowsOf<{ id: number; uuid: string }>(
      await tx.execute(sql`delete from persons
        where project_id = ${projectId} and id = any(${sql.param(alive)}::int[]) returning id, uuid`),
    );
    await forgetCachedAnswers(tx, projectId);
    await logPersonActivity(
      tx,
      projectId,
      userId,
      gone.map((p) => ({ personId: p.id, activity: 'deleted', detail: { name: p.uuid, changes: null } })),
    );
    return gone.length;
  });
}

/** Deletes every event of a person and keeps the person. False when the person is gone. */
export async function deletePersonEvents(db: Db, projectId: number, personId: number): Promise<boolean> {
  return lockedTransaction(db, async (tx) => {
    const alive = await lockPersons(tx, projectId, [personId]);
    if (!alive.length) return false;
    await deleteEventsOf(tx, projectId, alive);
    await forgetCachedAnswers(tx, projectId);
    return true;
  });
}

/** The persons of the project named by numeric ids, uuids or distinct ids. */
export async function personIdsOf(
  db: Db,
  projectId: number,
  by: { ids: number[]; uuids: string[] } | { distinctIds: string[] },
): Promise<number[]> {
  const rows =
    'distinctIds' in by
      ? await db.execute(sql`select distinct person_id as id from person_distinct_ids
          where project_id = ${projectId} and distinct_id = any(${sql.param(by.distinctIds)}::text[])`)
      : await db.execute(sql`select id from persons where project_id = ${projectId}
          and (id = any(${sql.param(by.ids)}::int[]) or uuid = any(${sql.param(by.uuids)}::uuid[]))`);
  return rowsOf<{ id: number }>(rows).map((r) => r.id);
}

/**
 * PostHog's split: every distinct id but `keep` gets a new person of its own (no properties), and
 * the events of that id move to it. Without a `keep` chosen by the caller the person's properties
 * are cleared too. False when the person is gone.
 */
export async function splitPerson(
  db: Db,
  projectId: number,
  personId: number,
  keep: string | undefined,
  userId: number | null,
): Promise<boolean> {
  return lockedTransaction(db, async (tx) => {
    if (!(await lockPersons(tx, projectId, [personId])).length) return false;
    const links = rowsOf<{ distinct_id: string; uuid: string }>(
      await tx.execute(sql`select link.distinct_id, p.uuid from person_distinct_ids as link
        join persons as p on p.id = link.person_id and p.project_id = link.project_id
        where link.project_id = ${projectId} and link.person_id = ${personId} order by link.distinct_id`),
    );
    const ids = links.map((r) => r.distinct_id);
    const detail = { name: links[0]?.uuid ?? null, changes: [personChange('split', null, { distinct_ids: ids })] };
    await logPersonActivity(tx, projectId, userId, [{ personId, activity: 'split_person', detail }]);
    const main = keep ?? ids[0];
    if (keep === undefined) {
      await tx.execute(sql`update persons set properties = '{}'::jsonb, updated_at = now()
        where project_id = ${projectId} and id = ${personId}`);
    }
    const moving = ids.filter((d) => d !== main);
    if (!moving.length) return true;
    const input = JSON.stringify(moving.map((d) => ({ distinct_id: d, uuid: randomUUID() })));
    await tx.execute(sql`with input as (
        select * from jsonb_to_recordset(${input}::jsonb) as x(distinct_id text, uuid uuid)),
      born as (
        insert into persons (uuid, project_id) select uuid, ${projectId} from input returning id, uuid),
      pairs as (select input.distinct_id, born.id from input join born using (uuid)),
      relinked as (
        update person_distinct_ids as link set person_id = pairs.id from pairs
        where link.project_id = ${projectId} and link.distinct_id = pairs.distinct_id)
      update events set person_id = pairs.id from pairs
      where events.project_id = ${projectId} and events.distinct_id = pairs.distinct_id
        and events.person_id = ${personId}`);
    return true;
  });
}
