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
  smallint,
  text,
  timestamp,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { projects } from './projects.js';
import { users } from './users.js';

const ts = (name: string) => timestamp(name, { withTimezone: true });

/**
 * PostHog's Hog functions: destinations and transformations written in Hog. `bytecode` is compiled by
 * the server on save. Secret inputs live sealed in `encrypted_inputs` (key -> sealed JSON of the input
 * item), never in `inputs`.
 */
export const hog_functions = pgTable(
  'hog_functions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    type: varchar('type', { length: 24 }).notNull(),
    name: varchar('name', { length: 400 }),
    description: text('description').notNull().default(''),
    enabled: boolean('enabled').notNull().default(false),
    deleted: boolean('deleted').notNull().default(false),
    hog: text('hog').notNull(),
    bytecode: jsonb('bytecode').$type<unknown[] | null>(),
    inputs_schema: jsonb('inputs_schema').$type<Record<string, unknown>[]>().notNull().default([]),
    inputs: jsonb('inputs').$type<Record<string, Record<string, unknown>>>().notNull().default({}),
    encrypted_inputs: jsonb('encrypted_inputs').$type<Record<string, string>>().notNull().default({}),
    filters: jsonb('filters').$type<Record<string, unknown>>().notNull().default({}),
    masking: jsonb('masking').$type<Record<string, unknown> | null>(),
    mappings: jsonb('mappings').$type<Record<string, unknown>[] | null>(),
    icon_url: text('icon_url'),
    template_id: varchar('template_id', { length: 400 }),
    execution_order: smallint('execution_order'),
    created_by: integer('created_by').references(() => users.id, { onDelete: 'set null' }),
    created_at: ts('created_at').notNull().defaultNow(),
    updated_at: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('hog_functions_project_idx').on(t.project_id, t.type).where(sql`not ${t.deleted}`),
    index('hog_functions_enabled_idx').on(t.project_id).where(sql`${t.enabled} and not ${t.deleted}`),
  ],
);

/** Log entries of runs (PostHog's log_entries for `hog_function`); expired by the worker. */
export const hog_function_logs = pgTable(
  'hog_function_logs',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    project_id: integer('project_id').notNull(),
    hog_function_id: uuid('hog_function_id')
      .notNull()
      .references(() => hog_functions.id, { onDelete: 'cascade' }),
    instance_id: text('instance_id').notNull(),
    level: varchar('level', { length: 16 }).notNull(),
    message: text('message').notNull(),
    timestamp: ts('timestamp').notNull().defaultNow(),
  },
  (t) => [
    index('hog_function_logs_fn_idx').on(t.hog_function_id, t.timestamp.desc()),
    index('hog_function_logs_ts_idx').on(t.timestamp),
  ],
);

/** Counters per function, metric and hour (PostHog's app_metrics2); expired by the worker. */
export const hog_function_metrics = pgTable(
  'hog_function_metrics',
  {
    hog_function_id: uuid('hog_function_id')
      .notNull()
      .references(() => hog_functions.id, { onDelete: 'cascade' }),
    bucket: ts('bucket').notNull(),
    metric_kind: varchar('metric_kind', { length: 16 }).notNull(),
    metric_name: varchar('metric_name', { length: 32 }).notNull(),
    count: integer('count').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.hog_function_id, t.bucket, t.metric_name] })],
);

/** Masking state: how often a masking hash was seen in its window. */
export const hog_function_masks = pgTable(
  'hog_function_masks',
  {
    hog_function_id: uuid('hog_function_id')
      .notNull()
      .references(() => hog_functions.id, { onDelete: 'cascade' }),
    hash: text('hash').notNull(),
    expires_at: ts('expires_at').notNull(),
    count: integer('count').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.hog_function_id, t.hash] })],
);

/** A replay of stored events of a time range into one destination; progress counted as jobs finish. */
export const hog_function_replays = pgTable('hog_function_replays', {
  id: uuid('id').primaryKey().defaultRandom(),
  project_id: integer('project_id').notNull(),
  hog_function_id: uuid('hog_function_id')
    .notNull()
    .references(() => hog_functions.id, { onDelete: 'cascade' }),
  date_from: ts('date_from').notNull(),
  date_to: ts('date_to').notNull(),
  status: varchar('status', { length: 16 }).notNull().default('running'),
  total: integer('total').notNull().default(0),
  enqueued: integer('enqueued').notNull().default(0),
  delivered: integer('delivered').notNull().default(0),
  failed: integer('failed').notNull().default(0),
  created_at: ts('created_at').notNull().defaultNow(),
});

/**
 * A counter per project, bumped by a trigger on every write to its Hog functions (drizzle/0028), whatever
 * code or SQL made it: ingestion reads it with the project and keeps the project's runnable functions,
 * compiled inputs opened, per process until it changes.
 */
export const hog_function_versions = pgTable('hog_function_versions', {
  project_id: integer('project_id')
    .primaryKey()
    .references(() => projects.id, { onDelete: 'cascade' }),
  version: bigint('version', { mode: 'number' }).notNull().default(1),
});
