import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { projects } from './projects.js';
import { users } from './users.js';

/**
 * Ingested events, partitioned by month of `timestamp` (drizzle/0026: Drizzle does not model
 * partitioning, so the table is made by hand there, and partitions are made ahead by
 * `src/event-partitions/`). `id` is the insertion order (exports stream by it). A partitioned
 * table's unique index must hold the partition key, so `(project_id, uuid)`, which makes a client's
 * retry idempotent, is kept unique in `event_uuids`, written by the same statements as the events.
 * The indexes serve the events listing newest-first, by name, by distinct_id and by person (every
 * query names its project first). A BRIN index on `timestamp` was measured and left out: the planner
 * took it for tenant queries over the last day, reading every project's rows of those pages (152 ms
 * against 77 ms by the `(project_id, timestamp)` B-tree, 1,000,000 events).
 */
export const events = pgTable(
  'events',
  {
    id: bigserial('id', { mode: 'number' }).notNull(),
    uuid: uuid('uuid').notNull(),
    // No foreign key: checking one per inserted row was a fifth of PostgreSQL's ingestion time. The
    // statements that insert events lock the project row once (key share, as the check did), and
    // deleting a project deletes its events (a trigger, drizzle/0028).
    project_id: integer('project_id').notNull(),
    event: varchar('event', { length: 400 }).notNull(),
    distinct_id: text('distinct_id').notNull(),
    properties: jsonb('properties').$type<Record<string, unknown>>().notNull().default({}),
    timestamp: timestamp('timestamp', { withTimezone: true, precision: 6 }).notNull(),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    elements_chain: text('elements_chain').notNull().default(''),
    person_id: integer('person_id'),
  },
  (t) => [
    index('events_project_timestamp_idx').on(t.project_id, t.timestamp.desc(), t.id.desc()),
    index('events_project_event_timestamp_idx').on(t.project_id, t.event, t.timestamp.desc(), t.id.desc()),
    index('events_project_distinct_id_idx').on(t.project_id, t.distinct_id, t.timestamp.desc()),
    index('events_project_person_idx').on(t.project_id, t.person_id, t.timestamp.desc()),
  ],
);

/**
 * One row per stored event, `(project_id, uuid)` unique across all of `events`' partitions: ingestion
 * inserts here in the statement that inserts the event, so a uuid already stored is skipped. The
 * event's `timestamp` rides along so that retention forgets the uuids of the partitions it drops.
 */
export const event_uuids = pgTable(
  'event_uuids',
  {
    // As `events.project_id`: locked once per statement and deleted with the project (drizzle/0028).
    project_id: integer('project_id').notNull(),
    uuid: uuid('uuid').notNull(),
    timestamp: timestamp('timestamp', { withTimezone: true, precision: 6 }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.project_id, t.uuid] }),
    index('event_uuids_timestamp_brin').using('brin', t.timestamp),
  ],
);

/**
 * Events counted per project, name and UTC hour, for the queries the HogQL compiler can answer from counts alone
 * (src/hogql/rollup.ts). Triggers on `events` append each statement's inserted and deleted rows to
 * `event_count_deltas` (drizzle/0035), so a count commits with its events and is never shared between projects;
 * a periodic pass folds the deltas into `event_counts`, and readers add both. `event`, `timestamp` and
 * `project_id` of a stored event are never updated (an UPDATE would need a trigger of its own).
 */
export const event_counts = pgTable(
  'event_counts',
  {
    project_id: integer('project_id').notNull(),
    event: varchar('event', { length: 400 }).notNull(),
    hour: timestamp('hour', { withTimezone: true }).notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.event, t.hour] })],
);

/** Counts not yet folded into `event_counts`: one row per statement's project, name and hour (n may be negative). */
export const event_count_deltas = pgTable('event_count_deltas', {
  project_id: integer('project_id').notNull(),
  event: varchar('event', { length: 400 }).notNull(),
  hour: timestamp('hour', { withTimezone: true }).notNull(),
  n: bigint('n', { mode: 'number' }).notNull(),
});

/** One person per identity; `$identify` links several distinct ids to one person. */
export const persons = pgTable(
  'persons',
  {
    id: serial('id').primaryKey(),
    uuid: uuid('uuid').notNull().unique().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    properties: jsonb('properties').$type<Record<string, unknown>>().notNull().default(sql`'{}'::jsonb`),
    is_identified: boolean('is_identified').notNull().default(false),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('persons_project_idx').on(t.project_id, t.id),
    // Batch exports of the persons model read persons in order of their last update.
    index('persons_project_updated_idx').on(t.project_id, t.updated_at, t.id),
  ],
);

export const person_distinct_ids = pgTable(
  'person_distinct_ids',
  {
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    distinct_id: varchar('distinct_id', { length: 400 }).notNull(),
    person_id: integer('person_id')
      .notNull()
      .references(() => persons.id, { onDelete: 'cascade' }),
  },
  (t) => [
    primaryKey({ columns: [t.project_id, t.distinct_id] }),
    index('person_distinct_ids_person_idx').on(t.person_id),
  ],
);

/** A change to a person made through the API, as PostHog's activity log keeps it ("Person" scope). */
export interface PersonActivityDetail {
  name: string | null;
  changes: { type: 'Person'; action: string; field: string | null; before: unknown; after: unknown }[] | null;
}

/**
 * Who changed, split or deleted a person through the API, for the persons' `activity` pages. `person_id` is the
 * person's id at the time and no reference: the entry of a deletion outlives the person.
 */
export const person_activity_logs = pgTable(
  'person_activity_logs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    person_id: integer('person_id').notNull(),
    user_id: integer('user_id').references(() => users.id, { onDelete: 'set null' }),
    activity: varchar('activity', { length: 79 }).notNull(),
    detail: jsonb('detail').$type<PersonActivityDetail>().notNull(),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('person_activity_logs_project_created_idx').on(t.project_id, t.created_at.desc()),
    index('person_activity_logs_person_created_idx').on(t.project_id, t.person_id, t.created_at.desc()),
  ],
);
