import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  serial,
  text,
  timestamp,
  unique,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { organizations } from './organizations.js';
import { projects } from './projects.js';
import { users } from './users.js';

/**
 * Every pipeline plugin. The four API families (destinations, transformations, frontend and import
 * apps) are views over this one table, chosen by `capabilities`. Inline plugins ship with the server
 * and belong to no organization.
 */
export const plugins = pgTable(
  'plugins',
  {
    id: serial('id').primaryKey(),
    organization_id: uuid('organization_id').references(() => organizations.id, { onDelete: 'cascade' }),
    plugin_type: varchar('plugin_type', { length: 200 }),
    is_global: boolean('is_global').notNull().default(false),
    name: varchar('name', { length: 200 }),
    description: text('description'),
    url: varchar('url', { length: 800 }),
    icon: varchar('icon', { length: 800 }),
    config_schema: jsonb('config_schema').$type<unknown>().default([]),
    tag: varchar('tag', { length: 200 }),
    latest_tag: varchar('latest_tag', { length: 800 }),
    latest_tag_checked_at: timestamp('latest_tag_checked_at', { withTimezone: true }),
    capabilities: jsonb('capabilities').$type<Record<string, unknown> | null>().default({}),
    metrics: jsonb('metrics').$type<Record<string, unknown> | null>().default({}),
    public_jobs: jsonb('public_jobs').$type<Record<string, unknown> | null>().default({}),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique('plugins_organization_url_unique').on(t.organization_id, t.url),
    index('plugins_is_global_idx').on(t.is_global),
  ],
);

/** The files of a plugin: edited through the API for `source` plugins, unpacked from the archive otherwise. */
export const plugin_source_files = pgTable(
  'plugin_source_files',
  {
    id: serial('id').primaryKey(),
    plugin_id: integer('plugin_id')
      .notNull()
      .references(() => plugins.id, { onDelete: 'cascade' }),
    filename: varchar('filename', { length: 200 }).notNull(),
    source: text('source').notNull(),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [unique('plugin_source_files_plugin_filename_unique').on(t.plugin_id, t.filename)],
);

/** A plugin switched on (or off) in one project, with that project's settings for it. */
export const plugin_configs = pgTable(
  'plugin_configs',
  {
    id: serial('id').primaryKey(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    plugin_id: integer('plugin_id')
      .notNull()
      .references(() => plugins.id, { onDelete: 'cascade' }),
    enabled: boolean('enabled').notNull().default(false),
    order: integer('order').notNull(),
    config: jsonb('config').$type<Record<string, unknown>>().notNull().default({}),
    /**
     * The secret settings, encrypted, by key: kept apart from `config` so that a value stays secret
     * (never returned) whatever the plugin's `config_schema` later says.
     */
    secrets: jsonb('secrets').$type<Record<string, string>>().notNull().default({}),
    name: varchar('name', { length: 400 }),
    description: varchar('description', { length: 1000 }),
    deleted: boolean('deleted').notNull().default(false),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('plugin_configs_project_order_idx').on(t.project_id, t.order, t.plugin_id),
    index('plugin_configs_plugin_idx').on(t.plugin_id, t.enabled),
  ],
);

/** Who did what to plugins and plugin configs, for the `activity` pages. */
export const plugin_activity_logs = pgTable(
  'plugin_activity_logs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organization_id: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    project_id: integer('project_id').references(() => projects.id, { onDelete: 'set null' }),
    user_id: integer('user_id').references(() => users.id, { onDelete: 'set null' }),
    activity: varchar('activity', { length: 79 }).notNull(),
    scope: varchar('scope', { length: 79 }).notNull(),
    item_id: varchar('item_id', { length: 72 }).notNull(),
    detail: jsonb('detail').$type<ActivityDetail>().notNull(),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('plugin_activity_logs_org_created_idx').on(t.organization_id, t.created_at.desc())],
);

/**
 * PostHog's plugin log. Plugin code does not run here, so the server writes the entries itself
 * (`source` SYSTEM) when a config changes; `instance_id` groups the entries of one write.
 */
export const plugin_log_entries = pgTable(
  'plugin_log_entries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    plugin_config_id: integer('plugin_config_id')
      .notNull()
      .references(() => plugin_configs.id, { onDelete: 'cascade' }),
    plugin_id: integer('plugin_id').notNull(),
    timestamp: timestamp('timestamp', { withTimezone: true, precision: 6 }).notNull().defaultNow(),
    source: varchar('source', { length: 16 }).notNull(),
    type: varchar('type', { length: 16 }).notNull(),
    message: text('message').notNull(),
    instance_id: uuid('instance_id').notNull(),
  },
  (t) => [index('plugin_log_entries_config_idx').on(t.project_id, t.plugin_config_id, t.timestamp.desc())],
);

export interface ActivityChange {
  type: 'Plugin' | 'PluginConfig';
  action: 'created' | 'changed' | 'deleted';
  field: string | null;
  before: unknown;
  after: unknown;
}

export interface ActivityDetail {
  name: string | null;
  changes: ActivityChange[] | null;
}
