import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import { getOrganizationView, organizationExtras, type OrganizationRow } from './queries.js';
import { instanceTag, serializeOrganization } from './serialize.js';

type Organization = components['schemas']['Organization'];

/** Organizations with their projects and member counts, each with the caller's level (null where none). */
export async function presentOrganizations(
  db: Db,
  rows: OrganizationRow[],
  levelOf: (organizationId: string) => number | null,
): Promise<Organization[]> {
  const extras = await organizationExtras(
    db,
    rows.map((o) => o.id),
  );
  return rows.map((o) => serializeOrganization(o, levelOf(o.id), extras.get(o.id)!, instanceTag()));
}

/** One organization as a member at `level` sees it, read in one statement; undefined when it is gone. */
export async function readOrganization(db: Db, id: string, level: number): Promise<Organization | undefined> {
  const view = await getOrganizationView(db, id);
  return view && serializeOrganization(view.organization, level, view.extras, instanceTag());
}
