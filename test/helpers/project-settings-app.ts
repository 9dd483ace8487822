// Shared by project_*.test.ts (settings, onboarding, change_organization, activity): one app.
import t from 'tap';
import { buildTestApp } from './app.js';

export const ctx = await buildTestApp(t);
export const { call, db } = ctx;

export const org = (tenant: { organization: { id: string } }, id: number | string) => ({
  organization_id: tenant.organization.id,
  id,
});
