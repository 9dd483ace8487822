// What the dashboards test files share: the fields of each answer, the error bodies, and calls that set up
// a dashboard through the API.
import type { TestContext } from './app.js';
import type { Tenant } from './factories.js';

export const LIST_FIELDS = [
  'id',
  'name',
  'description',
  'pinned',
  'created_at',
  'created_by',
  'is_shared',
  'deleted',
  'creation_mode',
  'tags',
  'restriction_level',
  'effective_restriction_level',
  'effective_privilege_level',
  // PostHog's current DashboardBasic adds these.
  'last_accessed_at',
  'last_viewed_at',
  'user_access_level',
  'access_control_version',
  'last_refresh',
  'team_id',
].sort();
export const FULL_FIELDS = [
  ...LIST_FIELDS,
  'use_template',
  'use_dashboard',
  'delete_insights',
  'filters',
  'tiles',
  'variables',
  'breakdown_colors',
  'data_color_theme_id',
  'persisted_filters',
  'persisted_variables',
].sort();

export const denied = (scope: string) => ({
  type: 'authentication_error',
  code: 'permission_denied',
  detail: `API key missing required scope '${scope}'`,
  attr: null,
});
export const notFound = (detail = 'Not found.') => ({ type: 'invalid_request', code: 'not_found', detail, attr: null });
export const invalid = (attr: string | null, detail: string) => ({
  type: 'validation_error',
  code: 'invalid_input',
  detail,
  attr,
});
export const NO_EDIT = "You don't have edit permissions for this dashboard.";

/** Creates dashboards and changes them through `ctx`'s app, failing loudly when set-up does not succeed. */
export function dashboardCalls({ call }: Pick<TestContext, 'call'>) {
  async function dashboard(
    tenant: Tenant,
    body: Record<string, unknown> = {},
    key = tenant.key,
    project = tenant.project.id,
  ) {
    const res = await call('dashboards_create', {
      key,
      params: { project_id: project },
      body: { name: 'Dash', ...body },
    });
    if (res.status !== 201) throw new Error(`could not create a dashboard: ${res.raw}`);
    return res.body;
  }

  async function patch(tenant: Tenant, id: number, body: Record<string, unknown>, key = tenant.key) {
    return call('dashboards_partial_update', { key, params: { project_id: tenant.project.id, id }, body });
  }

  async function withTextTiles(tenant: Tenant, id: number, ...bodies: string[]) {
    const tiles = bodies.map((body, i) => ({
      text: { body },
      layouts: { sm: { x: (i % 2) * 6, y: Math.floor(i / 2) * 5, w: 6, h: 5 } },
    }));
    const res = await patch(tenant, id, { tiles });
    if (res.status !== 200) throw new Error(`could not add tiles: ${res.raw}`);
    return res.body;
  }

  return { dashboard, patch, withTextTiles };
}
