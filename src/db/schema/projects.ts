import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  serial,
  text,
  timestamp,
  uuid,
  varchar,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core';
import { organizations } from './organizations.js';
import { users } from './users.js';
import { dashboards } from './dashboards.js';

/** A product the project's users said they want (`add_product_intent`) or finished onboarding for. */
export interface ProductIntent {
  product_type: string;
  created_at: string;
  updated_at: string;
  onboarding_completed_at: string | null;
}

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
    // The settings PostHog stores for features this server does not have (recordings, surveys, web
    // vitals...): kept as written, key by key, so that clients read back what they set. Keys never
    // written read as PostHog's defaults (src/projects/serialize.ts).
    settings: jsonb('settings').$type<Record<string, unknown>>().notNull().default({}),
    product_intents: jsonb('product_intents').$type<ProductIntent[]>().notNull().default([]),
    primary_dashboard_id: integer('primary_dashboard_id').references((): AnyPgColumn => dashboards.id, {
      onDelete: 'set null',
    }),
  },
  (t) => [index('projects_organization_idx').on(t.organization_id)],
);

/** Changes to a project's settings and token, for its `activity` page (PostHog's "Team" scope). */
export const project_activity_logs = pgTable(
  'project_activity_logs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    user_id: integer('user_id').references(() => users.id, { onDelete: 'set null' }),
    activity: varchar('activity', { length: 79 }).notNull(),
    detail: jsonb('detail').$type<ProjectActivityDetail>().notNull(),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('project_activity_logs_project_created_idx').on(t.project_id, t.created_at.desc())],
);

export interface ProjectActivityChange {
  type: 'Team';
  action: 'created' | 'changed' | 'deleted';
  field: string | null;
  before: unknown;
  after: unknown;
}

export interface ProjectActivityDetail {
  name: string | null;
  changes: ProjectActivityChange[] | null;
}
