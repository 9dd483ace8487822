import { eq } from 'drizzle-orm';
import { ApiError } from '../../core/errors.js';
import type { Db } from '../../db/client.js';
import { projects } from '../../db/schema/index.js';
import type { FilterNode } from '../../events/filters.js';
import { parseProperties } from './series.js';

/**
 * `filterTestAccounts: true` applies the project's `test_account_filters` (its settings, PostHog's
 * property filter list) to every event the query reads, ANDed with the query's own `properties`; without
 * configured filters it changes nothing, as in PostHog.
 */
export async function withTestAccountFilters<T extends { filters?: FilterNode }>(
  db: Db,
  teamId: number,
  prepared: T,
): Promise<T> {
  const [row] = await db
    .select({ filters: projects.test_account_filters })
    .from(projects)
    .where(eq(projects.id, teamId));
  let test: FilterNode | undefined;
  try {
    test = parseProperties(row?.filters ?? [], 'query__filterTestAccounts');
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    throw ApiError.validation(
      'query__filterTestAccounts',
      `The project's test account filters cannot be applied: ${err.detail}`,
    );
  }
  if (!test) return prepared;
  const filters: FilterNode = prepared.filters ? { kind: 'group', op: 'AND', values: [prepared.filters, test] } : test;
  return { ...prepared, filters };
}
