import { boolean, index, jsonb, pgTable, serial, text, timestamp, uuid, varchar } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.js';

// PostHog's Team; the API calls it a project and a project's id is its team id.
export const projects = pgTable(
  'projects',
  {
    id: serial('id').primaryKey(),
    uuid: uuid('uuid').notNull().unique().defaultRandom(),
    organization_id: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    name: varchar('name', { length: 200 }).notNull(),
    api_token: text('api_token').notNull().unique(),
    timezone: varchar('timezone', { length: 240 }).notNull().default('UTC'),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    completed_snippet_onboarding: boolean('completed_snippet_onboarding').notNull().default(false),
    has_completed_onboarding_for: jsonb('has_completed_onboarding_for').$type<Record<string, unknown>>(),
    ingested_event: boolean('ingested_event').notNull().default(false),
    is_demo: boolean('is_demo').notNull().default(false),
    access_control: boolean('access_control').notNull().default(false),
    app_urls: jsonb('app_urls').$type<(string | null)[]>().notNull().default([]),
    anonymize_ips: boolean('anonymize_ips').notNull().default(false),
    test_account_filters: jsonb('test_account_filters').$type<Record<string, unknown>[]>().notNull().default([]),
    product_description: text('product_description'),
    // PostHog's Team settings that posthog-js reads from its remote config; null means unset (off).
    autocapture_opt_out: boolean('autocapture_opt_out'),
    heatmaps_opt_in: boolean('heatmaps_opt_in'),
  },
  (t) => [index('projects_organization_idx').on(t.organization_id)],
);
