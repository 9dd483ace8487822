import { sql } from 'drizzle-orm';
import type { Db } from './db/client.js';
import { createOrganization } from './organizations/queries.js';
import { createKey } from './personal-api-keys/queries.js';
import { countUsers, createUser } from './users/queries.js';

export interface BootstrapResult {
  /** The key's value when this start created it and generated it (so it must be shown once). */
  generatedKey?: string;
  created: boolean;
}

/**
 * First start on an empty database: one user, "Default organization" with "Default project", and a
 * key with every scope. Several processes may start together; the lock makes one win.
 */
export async function bootstrap(
  db: Db,
  opts: { email: string; apiKey?: string | undefined },
): Promise<BootstrapResult> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(727275)`);
    if ((await countUsers(tx)) > 0) return { created: false };
    const user = await createUser(tx, { email: opts.email, first_name: 'Admin' });
    await createOrganization(tx, { name: 'Default organization' }, user.id);
    const { value } = await createKey(tx, user.id, { label: 'Bootstrap key', scopes: ['*'] }, opts.apiKey ?? undefined);
    return { created: true, ...(opts.apiKey ? {} : { generatedKey: value }) };
  });
}
