import { Level } from '../core/levels.js';
import type { Db } from '../db/client.js';
import { presentOrganizations } from './present.js';
import { createOrganization, type OrganizationInput } from './queries.js';

/**
 * A new organization owned by `userId`, answered from the transaction that created it: a failed answer
 * means no organization exists, so a client retrying it does not create a second one. `levelOf` is the
 * caller's level in other organizations; in the new one it is owner.
 */
export async function createOrganizationFor(
  db: Db,
  input: OrganizationInput & { name: string },
  userId: number,
  levelOf: (organizationId: string) => number | null,
) {
  return db.transaction(async (tx) => {
    const { organization } = await createOrganization(tx, input, userId);
    const level = (id: string) => (id === organization.id ? Level.OWNER : levelOf(id));
    return { id: organization.id, answer: (await presentOrganizations(tx, [organization], level))[0]! };
  });
}
