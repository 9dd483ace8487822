import type { Sql } from 'postgres';
import { copyClient } from '../backup/client.js';
import { dump } from '../backup/dump.js';
import { load, RestoreError } from '../backup/load.js';
import type { Database, Db } from '../db/client.js';
import { addMembership, createOrganization, getOrganization, organizationExtras } from '../organizations/queries.js';
import { createKey } from '../personal-api-keys/queries.js';
import { insertProject } from '../projects/queries.js';
import { createUser, findUserByEmail, type UserRow } from '../users/queries.js';
import { sqlState } from '../core/sql-state.js';
import { serializeKey } from '../personal-api-keys/serialize.js';
import { serializeOrganization } from '../organizations/serialize.js';
import { serializeProject } from '../projects/serialize.js';
import { serializeUserBasic } from '../users/serialize.js';
import { spec } from '../http/spec.js';
import { isUuid, rowIdOf } from '../core/ids.js';

export class CliError extends Error {}

type Flags = Record<string, string | undefined>;
interface Command {
  options: Record<string, { type: 'string' }>;
  run(db: Db, flags: Flags, database: Database): Promise<unknown>;
}

/** Runs `fn` with a COPY-capable client of the database, closed afterwards. */
async function withCopyClient<T>(database: Database, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = await copyClient(database.url);
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

const SCOPES = new Set((spec.components.schemas!.Scope as { enum: string[] }).enum);

function need(flags: Flags, name: string): string {
  const value = flags[name]?.trim();
  if (!value) throw new CliError(`--${name} is required`);
  return value;
}

async function userByEmail(db: Db, email: string): Promise<UserRow> {
  const user = await findUserByEmail(db, email);
  if (!user) throw new CliError(`no user with e-mail ${email}`);
  return user;
}

async function organization(db: Db, id: string) {
  const org = isUuid(id) ? await getOrganization(db, id) : undefined;
  if (!org) throw new CliError(`no organization with id ${id}`);
  return org;
}

const list = (value: string | undefined) =>
  value
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export const commands: Record<string, Command> = {
  backup: {
    options: { to: { type: 'string' } },
    async run(_db, flags, database) {
      const file = need(flags, 'to');
      return withCopyClient(database, (sql) => dump(sql, file));
    },
  },
  restore: {
    options: { from: { type: 'string' } },
    async run(_db, flags, database) {
      const file = need(flags, 'from');
      try {
        return await withCopyClient(database, (sql) => load(sql, file));
      } catch (err) {
        if (err instanceof RestoreError || (err as NodeJS.ErrnoException).code === 'ENOENT') {
          throw new CliError(`restore refused: ${(err as Error).message}`);
        }
        throw err;
      }
    },
  },
  'create-user': {
    options: { email: { type: 'string' }, 'first-name': { type: 'string' }, 'last-name': { type: 'string' } },
    async run(db, flags) {
      const email = need(flags, 'email');
      if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new CliError(`not an e-mail address: ${email}`);
      try {
        const user = await createUser(db, { email, first_name: flags['first-name'], last_name: flags['last-name'] });
        return serializeUserBasic(user);
      } catch (err) {
        if (sqlState(err) === '23505') throw new CliError(`a user with e-mail ${email} already exists`);
        throw err;
      }
    },
  },
  'create-organization': {
    options: { email: { type: 'string' }, name: { type: 'string' } },
    async run(db, flags) {
      const name = need(flags, 'name');
      if (name.length > 64) throw new CliError('--name may have at most 64 characters');
      const owner = await userByEmail(db, need(flags, 'email'));
      const { organization: org } = await createOrganization(db, { name }, owner.id);
      const extras = await organizationExtras(db, [org.id]);
      return serializeOrganization(org, 15, extras.get(org.id)!, process.env.INSTANCE_TAG || 'none');
    },
  },
  'add-member': {
    options: { organization: { type: 'string' }, email: { type: 'string' }, level: { type: 'string' } },
    async run(db, flags) {
      const level = Number(need(flags, 'level'));
      if (![1, 8, 15].includes(level)) throw new CliError('--level must be 1 (member), 8 (admin) or 15 (owner)');
      const org = await organization(db, need(flags, 'organization'));
      const user = await userByEmail(db, need(flags, 'email'));
      await addMembership(db, org.id, user.id, level);
      return { organization_id: org.id, user: serializeUserBasic(user), level };
    },
  },
  'create-project': {
    options: { organization: { type: 'string' }, name: { type: 'string' } },
    async run(db, flags) {
      const name = need(flags, 'name');
      if (name.length > 200) throw new CliError('--name may have at most 200 characters');
      const org = await organization(db, need(flags, 'organization'));
      return serializeProject(await insertProject(db, org.id, { name }), null);
    },
  },
  'create-key': {
    options: {
      email: { type: 'string' },
      label: { type: 'string' },
      scopes: { type: 'string' },
      'scoped-teams': { type: 'string' },
      'scoped-organizations': { type: 'string' },
    },
    async run(db, flags) {
      const user = await userByEmail(db, need(flags, 'email'));
      const label = flags.label?.trim() || 'CLI key';
      if (label.length > 40) throw new CliError('--label may have at most 40 characters');
      const scopes = list(flags.scopes) ?? ['*'];
      const bad = scopes.find((s) => !SCOPES.has(s));
      if (bad || !scopes.length) throw new CliError(`Invalid scope: ${bad ?? '(none)'}`);
      const teams = list(flags['scoped-teams'])?.map((s) => {
        const id = rowIdOf(s);
        if (id === undefined) throw new CliError(`--scoped-teams takes project ids, not ${s}`);
        return id;
      });
      const orgs = list(flags['scoped-organizations']);
      const badOrg = orgs?.find((o) => !isUuid(o));
      if (badOrg) throw new CliError(`--scoped-organizations takes organization ids, not ${badOrg}`);
      const { row, value } = await createKey(db, user.id, {
        label,
        scopes,
        scoped_teams: teams ?? [],
        scoped_organizations: orgs ?? [],
      });
      return serializeKey(row, value);
    },
  },
};
