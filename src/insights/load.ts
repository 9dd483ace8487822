import type { Db } from '../db/client.js';
import { ApiError } from '../core/errors.js';
import { dashboardContextOf, getInsight, type InsightRow } from './queries.js';

/** An insight of the project; any other id, or a deleted one unless asked for, is a 404. */
export async function loadInsight(
  db: Db,
  projectId: number,
  id: number,
  opts: { includeDeleted?: boolean } = {},
): Promise<InsightRow> {
  const row = await getInsight(db, projectId, id, opts);
  if (!row) throw ApiError.notFound();
  return row;
}

const parseJson = (text: string, attr: string): Record<string, unknown> => {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw ApiError.validation(attr, `${attr} must be JSON.`, 'parse_error');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw ApiError.validation(attr, `${attr} must be a JSON object.`);
  }
  return value as Record<string, unknown>;
};

/**
 * The dashboard context of a read (`from_dashboard`): that dashboard's filters and variables, or the
 * client's overrides of them (PostHog's filters_override / variables_override), which also apply alone.
 */
export async function dashboardContext(
  db: Db,
  projectId: number,
  q: { from_dashboard?: number; filters_override?: string; variables_override?: string },
): Promise<{ filters: Record<string, unknown>; variables: Record<string, unknown> } | undefined> {
  const filtersOverride = q.filters_override ? parseJson(q.filters_override, 'filters_override') : undefined;
  const variablesOverride = q.variables_override ? parseJson(q.variables_override, 'variables_override') : undefined;
  const dashboard =
    q.from_dashboard === undefined ? undefined : await dashboardContextOf(db, projectId, q.from_dashboard);
  if (q.from_dashboard !== undefined && !dashboard) throw ApiError.notFound();
  if (!dashboard && !filtersOverride && !variablesOverride) return undefined;
  return {
    filters: filtersOverride ?? dashboard?.filters ?? {},
    variables: variablesOverride ?? dashboard?.variables ?? {},
  };
}
