/** The organization a request acts in, resolved from its path before the handler runs. */
export interface OrganizationTenant {
  organization_id: string;
  /** The caller's membership level in that organization. */
  level: number;
}

/** A project route's tenant: the project and the organization that owns it. */
export interface ProjectTenant extends OrganizationTenant {
  project_id: number;
  /** The project's timezone (PostHog's team timezone), read with the project by authentication. */
  timezone: string;
}

/** Either; `project_id` and `timezone` are set on project routes only. */
export type Tenant = OrganizationTenant & { project_id?: number; timezone?: string };
