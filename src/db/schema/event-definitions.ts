import { sql } from 'drizzle-orm';
import { boolean, index, integer, pgTable, text, timestamp, unique, uuid, varchar } from 'drizzle-orm/pg-core';
import { projects } from './projects.js';
import { users } from './users.js';

/**
 * One row per event name a project has seen; ingestion creates it and keeps `last_seen_at`. Tags
 * live on the row (normalised, de-duplicated), since nothing else shares them.
 */
export const event_definitions = pgTable(
  'event_definitions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 400 }).notNull(),
    created_at: timestamp('created_at', { withTimezone: true }).defaultNow(),
    last_seen_at: timestamp('last_seen_at', { withTimezone: true }),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    updated_by_id: integer('updated_by_id').references(() => users.id, { onDelete: 'set null' }),
    description: text('description'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    owner_id: integer('owner_id').references(() => users.id, { onDelete: 'set null' }),
    verified: boolean('verified').notNull().default(false),
    verified_at: timestamp('verified_at', { withTimezone: true }),
    verified_by_id: integer('verified_by_id').references(() => users.id, { onDelete: 'set null' }),
    hidden: boolean('hidden').default(false),
  },
  (t) => [
    unique('event_definitions_project_name_unique').on(t.project_id, t.name),
    index('event_definitions_project_last_seen_idx').on(t.project_id, t.last_seen_at),
  ],
);
