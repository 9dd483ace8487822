/**
 * PostHog's apply_dashboard_filters_to_dict and apply_dashboard_variables_to_dict, for the kinds this
 * server computes: a dashboard's date range replaces the query's, its property filters are added to the
 * query's, its breakdown replaces the query's, its `filterTestAccounts` (when set, true or false)
 * replaces the query's; a HogQL query takes them as `filters` (HogQLFilters) and the dashboard's
 * variables override the query's of the same id.
 */
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function applyToSource(source: Record<string, unknown>, filters: Record<string, unknown>): Record<string, unknown> {
  const out = { ...source };
  const from = filters.date_from;
  const to = filters.date_to;
  const properties = Array.isArray(filters.properties) ? filters.properties : [];
  // PostHog's tri-state: unset (or null) keeps the query's own setting.
  const testAccounts = typeof filters.filterTestAccounts === 'boolean' ? filters.filterTestAccounts : undefined;
  // PostHog applies a dashboard's filters to the kinds with a date range and properties; an events
  // query has neither (it is left as it is).
  if (source.kind === 'EventsQuery') return source;
  if (source.kind === 'HogQLQuery') {
    const hogqlFilters = isObject(source.filters) ? { ...source.filters } : {};
    if (from || to) hogqlFilters.dateRange = { date_from: from ?? null, date_to: to ?? null };
    if (properties.length) {
      const own = Array.isArray(hogqlFilters.properties) ? hogqlFilters.properties : [];
      hogqlFilters.properties = [...own, ...properties];
    }
    if (testAccounts !== undefined) hogqlFilters.filterTestAccounts = testAccounts;
    if (Object.keys(hogqlFilters).length) out.filters = hogqlFilters;
    return out;
  }
  if (from || to) {
    out.dateRange = {
      ...(isObject(source.dateRange) ? source.dateRange : {}),
      ...(from ? { date_from: from } : {}),
      ...(to !== undefined ? { date_to: to } : {}),
    };
  }
  if (properties.length) {
    const own = Array.isArray(source.properties) ? source.properties : [];
    out.properties = [...own, ...properties];
  }
  if (testAccounts !== undefined) out.filterTestAccounts = testAccounts;
  if (isObject(filters.breakdown_filter) && source.kind === 'TrendsQuery')
    out.breakdownFilter = filters.breakdown_filter;
  return out;
}

function applyVariables(source: Record<string, unknown>, variables: Record<string, unknown>): Record<string, unknown> {
  if (source.kind !== 'HogQLQuery' || !isObject(source.variables)) return source;
  const own = source.variables;
  const merged: Record<string, unknown> = { ...own };
  for (const [id, v] of Object.entries(variables))
    if (id in own && isObject(v)) merged[id] = { ...(own[id] as object), ...v };
  return { ...source, variables: merged };
}

/** The query as run on a dashboard: with the dashboard's (or the override's) filters and variables. */
export function withDashboardFilters(
  query: Record<string, unknown>,
  filters: Record<string, unknown>,
  variables: Record<string, unknown>,
): Record<string, unknown> {
  const apply = (source: Record<string, unknown>) => applyVariables(applyToSource(source, filters), variables);
  if (isObject(query.source)) return { ...query, source: apply(query.source) };
  return apply(query);
}
