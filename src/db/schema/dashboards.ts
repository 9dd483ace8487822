import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  serial,
  smallint,
  text,
  timestamp,
  unique,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { projects } from './projects.js';
import { users } from './users.js';
import { insights } from './insights.js';

/**
 * Dashboards are soft-deleted (`deleted`), never removed through the API. Tags live on the row as a
 * normalised, sorted text array, which keeps them per project and makes `?tags=` one overlap test.
 */
export const dashboards = pgTable(
  'dashboards',
  {
    id: serial('id').primaryKey(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 400 }),
    description: text('description').notNull().default(''),
    pinned: boolean('pinned').notNull().default(false),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    created_by_id: integer('created_by_id').references(() => users.id, { onDelete: 'set null' }),
    deleted: boolean('deleted').notNull().default(false),
    creation_mode: varchar('creation_mode', { length: 16 }).notNull().default('default'),
    restriction_level: smallint('restriction_level').notNull().default(21),
    filters: jsonb('filters').$type<Record<string, unknown>>().notNull().default({}),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    // What the dashboard was made from, echoed back in `use_template` / `use_dashboard`.
    use_template: varchar('use_template', { length: 400 }).notNull().default(''),
    use_dashboard: integer('use_dashboard'),
    // Set on every retrieve, as PostHog does; `last_refresh` is only ever written by clients here,
    // since this server computes no insight results to refresh.
    last_accessed_at: timestamp('last_accessed_at', { withTimezone: true }),
    last_refresh: timestamp('last_refresh', { withTimezone: true }),
    // Dashboard-level query variables and chart colours: stored and returned as written.
    variables: jsonb('variables').$type<Record<string, unknown>>().notNull().default({}),
    breakdown_colors: jsonb('breakdown_colors').$type<unknown>().notNull().default([]),
    // PostHog's colour themes are a feature of its web app; the id is kept for clients that round-trip it.
    data_color_theme_id: integer('data_color_theme_id'),
  },
  (t) => [index('dashboards_project_idx').on(t.project_id, t.deleted)],
);

/** Creation modes (PostHog's CreationModeEnum); `unlisted` dashboards stay out of the list unless asked for. */
export type CreationMode = 'default' | 'template' | 'duplicate' | 'unlisted';

/**
 * Tiles: a text tile has `body`, an insight tile `insight_id` (an insight of the dashboard's project). A
 * deleted tile is kept (soft delete) so that it no longer shows but can be inspected. */
export const dashboard_tiles = pgTable(
  'dashboard_tiles',
  {
    id: serial('id').primaryKey(),
    dashboard_id: integer('dashboard_id')
      .notNull()
      .references(() => dashboards.id, { onDelete: 'cascade' }),
    body: text('body').notNull().default(''),
    insight_id: integer('insight_id').references(() => insights.id, { onDelete: 'cascade' }),
    layouts: jsonb('layouts').$type<Record<string, unknown>>().notNull().default({}),
    color: varchar('color', { length: 400 }),
    deleted: boolean('deleted').notNull().default(false),
    created_by_id: integer('created_by_id').references(() => users.id, { onDelete: 'set null' }),
    last_modified_by_id: integer('last_modified_by_id').references(() => users.id, { onDelete: 'set null' }),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    last_modified_at: timestamp('last_modified_at', { withTimezone: true }).notNull().defaultNow(),
    // The key an insight tile's result was last cached under in this dashboard's context (PostHog's
    // `filters_hash`): a plain read joins the answer by it, once checked against the key the query gives now.
    cache_key: varchar('cache_key', { length: 80 }),
  },
  (t) => [
    index('dashboard_tiles_dashboard_idx').on(t.dashboard_id),
    index('dashboard_tiles_insight_idx').on(t.insight_id),
  ],
);

/** Explicit edit rights on dashboards restricted to collaborators (PostHog's DashboardPrivilege). */
export const dashboard_collaborators = pgTable(
  'dashboard_collaborators',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    dashboard_id: integer('dashboard_id')
      .notNull()
      .references(() => dashboards.id, { onDelete: 'cascade' }),
    user_id: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    level: smallint('level').notNull(),
    added_at: timestamp('added_at', { withTimezone: true }).notNull().defaultNow(),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [unique('dashboard_collaborators_dashboard_user_unique').on(t.dashboard_id, t.user_id)],
);

/**
 * Public sharing, one row per dashboard or insight once first saved. Rotating replaces the token in place, so an
 * old token stops resolving at once.
 */
export const sharing_configurations = pgTable(
  'sharing_configurations',
  {
    id: serial('id').primaryKey(),
    // What is shared: a dashboard or an insight, exactly one (the check below), each shared at most once.
    dashboard_id: integer('dashboard_id')
      .unique()
      .references(() => dashboards.id, { onDelete: 'cascade' }),
    insight_id: integer('insight_id')
      .unique()
      .references(() => insights.id, { onDelete: 'cascade' }),
    access_token: varchar('access_token', { length: 400 }).notNull().unique(),
    enabled: boolean('enabled').notNull().default(false),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    // PostHog's SharingConfigurationSettings (display options of the shared page), validated on write.
    settings: jsonb('settings').$type<Record<string, unknown>>(),
    // While true, the public link answers only to a holder of one of the active share passwords.
    password_required: boolean('password_required').notNull().default(false),
  },
  (t) => [check('sharing_configurations_one_target', sql`num_nonnulls(${t.dashboard_id}, ${t.insight_id}) = 1`)],
);

/**
 * Passwords of a password-protected share. Only a salted scrypt hash is kept; the raw password is shown
 * once, in the answer that creates it. Deleting deactivates (PostHog keeps the row for its audit log).
 */
export const share_passwords = pgTable(
  'share_passwords',
  {
    id: serial('id').primaryKey(),
    sharing_configuration_id: integer('sharing_configuration_id')
      .notNull()
      .references(() => sharing_configurations.id, { onDelete: 'cascade' }),
    password_hash: varchar('password_hash', { length: 200 }).notNull(),
    note: varchar('note', { length: 100 }).notNull().default(''),
    created_by_id: integer('created_by_id').references(() => users.id, { onDelete: 'set null' }),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    is_active: boolean('is_active').notNull().default(true),
  },
  (t) => [index('share_passwords_sharing_idx').on(t.sharing_configuration_id)],
);
