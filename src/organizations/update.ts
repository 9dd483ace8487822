import { ApiError } from '../core/errors.js';
import { Level, requireLevel } from '../core/levels.js';
import type { OrganizationTenant } from '../core/tenant.js';
import type { Db } from '../db/client.js';
import { presentOrganizations } from './present.js';
import { updateOrganization, type OrganizationInput } from './queries.js';

/**
 * An administrator's change to the organization, answered from the transaction that wrote it, so an
 * error answer means nothing was changed. `levelOf` is the caller's level in an organization.
 */
export async function updateOrganizationAs(
  db: Db,
  tenant: OrganizationTenant,
  input: OrganizationInput,
  levelOf: (organizationId: string) => number | null,
) {
  requireLevel(tenant, Level.ADMIN);
  return db.transaction(async (tx) => {
    const organization = await updateOrganization(tx, tenant.organization_id, input);
    if (!organization) throw ApiError.notFound();
    return (await presentOrganizations(tx, [organization], levelOf))[0]!;
  });
}
