import { sql } from 'drizzle-orm';
import {
  bigint,
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { projects } from './projects.js';

const ts = (name: string) => timestamp(name, { withTimezone: true });

/**
 * A scheduled export of a project's events or persons. `destination_config` holds secrets too; they
 * are stripped on every read. `schedule_from` is where the scheduler resumes: intervals ending after
 * it get a run (it moves past a paused gap on unpause, as PostHog's schedule skips missed actions).
 */
export const batch_exports = pgTable(
  'batch_exports',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    // Nullable as PostHog's: null runs as `events` (batch-exports/records.ts exportModel).
    model: varchar('model', { length: 64 }).default('events'),
    destination_type: varchar('destination_type', { length: 64 }).notNull(),
    destination_config: jsonb('destination_config').$type<Record<string, unknown>>().notNull().default({}),
    interval: varchar('interval', { length: 64 }).notNull().default('hour'),
    paused: boolean('paused').notNull().default(false),
    deleted: boolean('deleted').notNull().default(false),
    created_at: ts('created_at').notNull().defaultNow(),
    last_updated_at: ts('last_updated_at').notNull().defaultNow(),
    last_paused_at: ts('last_paused_at'),
    start_at: ts('start_at'),
    end_at: ts('end_at'),
    hogql_query: text('hogql_query'),
    schema: jsonb('schema').$type<Record<string, unknown>>(),
    /** PostHog's property filters (a JSON list), null when the export takes every record. */
    filters: jsonb('filters').$type<Record<string, unknown>[]>(),
    schedule_from: ts('schedule_from').notNull().defaultNow(),
  },
  (t) => [
    index('batch_exports_project_idx').on(t.project_id, t.created_at.desc()),
    index('batch_exports_schedulable_idx').on(t.schedule_from).where(sql`not ${t.paused} and not ${t.deleted}`),
  ],
);

export const batch_export_backfills = pgTable(
  'batch_export_backfills',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    batch_export_id: uuid('batch_export_id')
      .notNull()
      .references(() => batch_exports.id, { onDelete: 'cascade' }),
    start_at: ts('start_at'),
    end_at: ts('end_at'),
    adjusted_start_at: ts('adjusted_start_at'),
    status: varchar('status', { length: 64 }).notNull(),
    total_records_count: bigint('total_records_count', { mode: 'number' }),
    created_at: ts('created_at').notNull().defaultNow(),
    finished_at: ts('finished_at'),
    last_updated_at: ts('last_updated_at').notNull().defaultNow(),
  },
  (t) => [index('batch_export_backfills_export_idx').on(t.batch_export_id, t.created_at.desc())],
);

/**
 * One run per data interval. `claimed_by`/`heartbeat_at` make a run the lock that keeps two workers
 * from exporting it at once: a claim succeeds only on a run that is waiting, or whose holder stopped
 * heartbeating.
 */
export const batch_export_runs = pgTable(
  'batch_export_runs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    batch_export_id: uuid('batch_export_id')
      .notNull()
      .references(() => batch_exports.id, { onDelete: 'cascade' }),
    backfill_id: uuid('backfill_id').references(() => batch_export_backfills.id, { onDelete: 'set null' }),
    status: varchar('status', { length: 64 }).notNull(),
    records_completed: integer('records_completed'),
    records_total_count: integer('records_total_count'),
    bytes_exported: bigint('bytes_exported', { mode: 'number' }),
    latest_error: text('latest_error'),
    data_interval_start: ts('data_interval_start'),
    data_interval_end: ts('data_interval_end').notNull(),
    cursor: text('cursor'),
    created_at: ts('created_at').notNull().defaultNow(),
    finished_at: ts('finished_at'),
    last_updated_at: ts('last_updated_at').notNull().defaultNow(),
    claimed_by: text('claimed_by'),
    heartbeat_at: ts('heartbeat_at'),
    attempts: integer('attempts').notNull().default(0),
  },
  (t) => [
    index('batch_export_runs_export_created_idx').on(t.batch_export_id, t.created_at.desc(), t.id.desc()),
    index('batch_export_runs_backfill_idx').on(t.backfill_id),
    index('batch_export_runs_status_idx').on(t.status),
    // The scheduler's idempotence: one scheduled run per interval, however many workers tick.
    uniqueIndex('batch_export_runs_scheduled_unique')
      .on(t.batch_export_id, t.data_interval_end)
      .where(sql`${t.backfill_id} is null`),
  ],
);

export const batch_export_logs = pgTable(
  'batch_export_logs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    batch_export_id: uuid('batch_export_id')
      .notNull()
      .references(() => batch_exports.id, { onDelete: 'cascade' }),
    instance_id: text('instance_id').notNull().default(''),
    timestamp: timestamp('timestamp', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    level: varchar('level', { length: 16 }).notNull(),
    message: text('message').notNull(),
  },
  (t) => [index('batch_export_logs_export_idx').on(t.batch_export_id, t.timestamp.desc(), t.id.desc())],
);
