import { boolean, index, integer, jsonb, pgTable, smallint, text, timestamp, uuid, varchar } from 'drizzle-orm/pg-core';
import { organizations } from './organizations.js';
import { users } from './users.js';

export interface InviteProjectAccess {
  id: number;
  level: number;
}

/** Pending invitations; accepting one deletes it. */
export const organization_invites = pgTable(
  'organization_invites',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organization_id: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    target_email: varchar('target_email', { length: 254 }).notNull(),
    first_name: varchar('first_name', { length: 30 }).notNull().default(''),
    level: smallint('level').notNull().default(1),
    message: text('message'),
    private_project_access: jsonb('private_project_access').$type<InviteProjectAccess[] | null>().default([]),
    created_by_id: integer('created_by_id').references(() => users.id, { onDelete: 'set null' }),
    emailing_attempt_made: boolean('emailing_attempt_made').notNull().default(false),
    created_at: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updated_at: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('organization_invites_org_created_idx').on(t.organization_id, t.created_at),
    index('organization_invites_org_email_idx').on(t.organization_id, t.target_email),
  ],
);

/** E-mail domains; a domain belongs to one organization at most, hence the global unique index. */
export const organization_domains = pgTable(
  'organization_domains',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organization_id: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    domain: varchar('domain', { length: 128 }).notNull().unique('organization_domains_domain_unique'),
    verification_challenge: varchar('verification_challenge', { length: 128 }).notNull(),
    verified_at: timestamp('verified_at', { withTimezone: true }),
    last_verification_retry: timestamp('last_verification_retry', { withTimezone: true }),
    jit_provisioning_enabled: boolean('jit_provisioning_enabled').notNull().default(false),
    sso_enforcement: varchar('sso_enforcement', { length: 28 }).notNull().default(''),
    saml_entity_id: varchar('saml_entity_id', { length: 512 }),
    saml_acs_url: varchar('saml_acs_url', { length: 512 }),
    saml_x509_cert: text('saml_x509_cert'),
  },
  (t) => [index('organization_domains_org_idx').on(t.organization_id)],
);
