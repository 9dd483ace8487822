import { boolean, index, integer, pgTable, smallint, timestamp, unique, uuid, varchar } from 'drizzle-orm/pg-core';
import { users } from './users.js';

export const organizations = pgTable('organizations', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: varchar('name', { length: 64 }).notNull(),
  slug: varchar('slug', { length: 48 }).notNull().unique(),
  logo_media_id: uuid('logo_media_id'),
  created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  // Self-hosted PostHog forces new organizations to ROOT (9).
  plugins_access_level: smallint('plugins_access_level').notNull().default(9),
  is_member_join_email_enabled: boolean('is_member_join_email_enabled').notNull().default(true),
  enforce_2fa: boolean('enforce_2fa'),
  customer_id: varchar('customer_id', { length: 200 }),
  // Nullable as PostHog's model: null reads as false (members below administrator cannot invite).
  members_can_invite: boolean('members_can_invite').default(true),
  members_can_use_personal_api_keys: boolean('members_can_use_personal_api_keys').notNull().default(true),
  allow_publicly_shared_resources: boolean('allow_publicly_shared_resources').notNull().default(true),
  // PostHog's defaults: AI data processing neither approved nor refused, Bayesian experiments, and
  // new projects keep client IPs unless the organization says otherwise.
  is_ai_data_processing_approved: boolean('is_ai_data_processing_approved'),
  default_experiment_stats_method: varchar('default_experiment_stats_method', { length: 20 }).default('bayesian'),
  default_anonymize_ips: boolean('default_anonymize_ips').notNull().default(false),
  // Active members, bots left out: kept by triggers (drizzle/0017), so a read never counts them.
  member_count: integer('member_count').notNull().default(0),
});

export const organization_memberships = pgTable(
  'organization_memberships',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organization_id: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    user_id: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    level: smallint('level').notNull().default(1),
    joined_at: timestamp('joined_at', { withTimezone: true }).notNull().defaultNow(),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique('organization_memberships_org_user_unique').on(t.organization_id, t.user_id),
    index('organization_memberships_user_idx').on(t.user_id),
    // The members list's order: a page is read off this index instead of sorting every membership.
    index('organization_memberships_org_joined_idx').on(t.organization_id, t.joined_at, t.id),
  ],
);
