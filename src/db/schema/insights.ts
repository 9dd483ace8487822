import { sql } from 'drizzle-orm';
import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
  unique,
  varchar,
} from 'drizzle-orm/pg-core';
import { projects } from './projects.js';
import { users } from './users.js';

/**
 * Saved queries (PostHog's Insight). Soft-deleted (`deleted`), never removed through the API; tags on
 * the row as dashboards keep them. `short_id` is the id PostHog's links use, unique per project.
 */
export const insights = pgTable(
  'insights',
  {
    id: serial('id').primaryKey(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    short_id: varchar('short_id', { length: 12 }).notNull(),
    name: varchar('name', { length: 400 }),
    derived_name: varchar('derived_name', { length: 400 }),
    description: varchar('description', { length: 400 }),
    query: jsonb('query').$type<Record<string, unknown>>(),
    // PostHog's legacy filters: stored and returned as written; only `query` is computed.
    filters: jsonb('filters').$type<Record<string, unknown>>().notNull().default({}),
    order: integer('order'),
    deleted: boolean('deleted').notNull().default(false),
    saved: boolean('saved').notNull().default(false),
    favorited: boolean('favorited').notNull().default(false),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    created_by_id: integer('created_by_id').references(() => users.id, { onDelete: 'set null' }),
    last_modified_at: timestamp('last_modified_at', { withTimezone: true }).notNull().defaultNow(),
    last_modified_by_id: integer('last_modified_by_id').references(() => users.id, { onDelete: 'set null' }),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique('insights_project_short_id_unique').on(t.project_id, t.short_id),
    index('insights_project_idx').on(t.project_id, t.deleted),
  ],
);

/**
 * Computed query results, shared by every process (PostHog keeps them in Redis). A row is one answer
 * for one project and one cache key: the hash of the normalized query, the filters and variables
 * applied to it, and the project's timezone. `expires_at` bounds how long a row is kept at all (it is
 * served stale until then, as PostHog serves stale results on `force_cache`); `bytes` lets the
 * per-project bound drop the oldest rows first.
 */
export const query_cache = pgTable(
  'query_cache',
  {
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    cache_key: varchar('cache_key', { length: 80 }).notNull(),
    answer: jsonb('answer').$type<Record<string, unknown>>().notNull(),
    last_refresh: timestamp('last_refresh', { withTimezone: true }).notNull(),
    bytes: integer('bytes').notNull(),
    expires_at: timestamp('expires_at', { withTimezone: true }).notNull(),
    /** Reads served from the row (counted in each process, written every few seconds). */
    hits: integer('hits').notNull().default(0),
    /** Computations stored under the key: the misses, and refreshes of a stale or forced answer. */
    misses: integer('misses').notNull().default(0),
    /**
     * The fields an insight shows of the answer (result, hasMore, columns, types, hogql, resolved_date_range)
     * as the text of a JSON object, written with it: a dashboard's plain read sends it as it is.
     */
    insight_fields: text('insight_fields'),
  },
  (t) => [primaryKey({ columns: [t.project_id, t.cache_key] }), index('query_cache_expiry_idx').on(t.expires_at)],
);
