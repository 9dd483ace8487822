import { sql } from 'drizzle-orm';
import {
  boolean,
  index,
  integer,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  unique,
  uuid,
  varchar,
} from 'drizzle-orm/pg-core';
import { projects } from './projects.js';
import { users } from './users.js';

/**
 * One row per property name a project has seen, per kind (`type`: 1 event, 2 person, PostHog's
 * numbers). Ingestion creates it with the type it detects from the first value (`property_type`
 * stays as first detected, unless it could not be told then); people edit the rest.
 */
export const property_definitions = pgTable(
  'property_definitions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 400 }).notNull(),
    type: smallint('type').notNull().default(1),
    property_type: varchar('property_type', { length: 50 }),
    is_numerical: boolean('is_numerical').notNull().default(false),
    description: text('description'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    verified: boolean('verified').notNull().default(false),
    verified_at: timestamp('verified_at', { withTimezone: true }),
    verified_by_id: integer('verified_by_id').references(() => users.id, { onDelete: 'set null' }),
    hidden: boolean('hidden').notNull().default(false),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    updated_by_id: integer('updated_by_id').references(() => users.id, { onDelete: 'set null' }),
  },
  (t) => [unique('property_definitions_project_type_name_unique').on(t.project_id, t.type, t.name)],
);

/** Which event names carry which properties, for listing the properties of some events. */
export const event_properties = pgTable(
  'event_properties',
  {
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    event: varchar('event', { length: 400 }).notNull(),
    property: varchar('property', { length: 400 }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.project_id, t.event, t.property] }),
    index('event_properties_project_property_idx').on(t.project_id, t.property),
  ],
);
