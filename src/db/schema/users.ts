import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, serial, text, timestamp, uuid, varchar } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.js';
import { projects } from './projects.js';

export const users = pgTable('users', {
  id: serial('id').primaryKey(),
  uuid: uuid('uuid').notNull().unique().defaultRandom(),
  distinct_id: text('distinct_id').notNull().unique(),
  first_name: varchar('first_name', { length: 150 }).notNull().default(''),
  last_name: varchar('last_name', { length: 150 }).notNull().default(''),
  email: varchar('email', { length: 254 }).notNull().unique(),
  is_email_verified: boolean('is_email_verified'),
  hedgehog_config: jsonb('hedgehog_config').$type<Record<string, unknown>>(),
  is_active: boolean('is_active').notNull().default(true),
  is_staff: boolean('is_staff').notNull().default(false),
  date_joined: timestamp('date_joined', { withTimezone: true }).notNull().defaultNow(),
  current_organization_id: uuid('current_organization_id').references(() => organizations.id, { onDelete: 'set null' }),
  current_team_id: integer('current_team_id').references(() => projects.id, { onDelete: 'set null' }),
  // Preferences PostHog keeps on its User; stored and returned as given. Null where PostHog's is.
  role_at_organization: varchar('role_at_organization', { length: 64 }),
  anonymize_data: boolean('anonymize_data').default(false),
  toolbar_mode: varchar('toolbar_mode', { length: 200 }).default('toolbar'),
  theme_mode: varchar('theme_mode', { length: 20 }),
  /** Only the notification settings the user changed; answers merge them over PostHog's defaults. */
  partial_notification_settings: jsonb('partial_notification_settings').$type<Record<string, unknown>>(),
  events_column_config: jsonb('events_column_config').$type<unknown>().notNull().default({ active: 'DEFAULT' }),
  has_seen_product_intro_for: jsonb('has_seen_product_intro_for').$type<unknown>(),
  allow_sidebar_suggestions: boolean('allow_sidebar_suggestions'),
});

export const personal_api_keys = pgTable(
  'personal_api_keys',
  {
    id: text('id').primaryKey(),
    user_id: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    label: varchar('label', { length: 40 }).notNull(),
    secure_value: text('secure_value').notNull().unique(),
    mask_value: varchar('mask_value', { length: 11 }).notNull(),
    scopes: text('scopes').array().notNull(),
    scoped_teams: integer('scoped_teams').array().notNull().default(sql`'{}'::integer[]`),
    scoped_organizations: text('scoped_organizations').array().notNull().default(sql`'{}'::text[]`),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    last_used_at: timestamp('last_used_at', { withTimezone: true }),
    last_rolled_at: timestamp('last_rolled_at', { withTimezone: true }),
  },
  (t) => [index('personal_api_keys_user_idx').on(t.user_id, t.created_at)],
);
