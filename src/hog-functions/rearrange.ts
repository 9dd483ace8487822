import { and, eq, inArray } from 'drizzle-orm';
import { ApiError } from '../core/errors.js';
import type { ProjectTenant } from '../core/tenant.js';
import { isUuid } from '../core/ids.js';
import type { Db } from '../db/client.js';
import { hog_functions } from '../db/schema/index.js';
import { transformationsOf, type HogFunctionView } from './queries.js';

/** PostHog's rearrange: new execution orders for the project's transformations, all or none. */
export async function rearrange(
  db: Db,
  tenant: ProjectTenant,
  orders: Record<string, number> | undefined,
): Promise<HogFunctionView[]> {
  const ids = Object.keys(orders ?? {});
  if (!orders || !ids.length) throw ApiError.validation(null, 'No orders provided');
  await db.transaction(async (tx) => {
    const found = new Set(
      (
        await tx
          .select({ id: hog_functions.id })
          .from(hog_functions)
          .where(
            and(
              eq(hog_functions.project_id, tenant.project_id),
              eq(hog_functions.type, 'transformation'),
              eq(hog_functions.deleted, false),
              inArray(hog_functions.id, ids.filter(isUuid)),
            ),
          )
      ).map((r) => r.id),
    );
    const missing = ids.find((id) => !found.has(id));
    if (missing) throw ApiError.validation(null, `HogFunction with id ${missing} does not exist`);
    for (const id of ids) {
      await tx
        .update(hog_functions)
        .set({ execution_order: orders[id], updated_at: new Date() })
        .where(and(eq(hog_functions.project_id, tenant.project_id), eq(hog_functions.id, id)));
    }
  });
  return transformationsOf(db, tenant.project_id);
}
