import { and, asc, desc, eq, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../client.js';
import { plugin_activity_logs, plugin_configs, plugins, projects, type ActivityDetail } from '../schema/index.js';
import type { Page } from '../../http/pagination.js';
import { countWhere } from './util.js';

export type PluginConfigRow = typeof plugin_configs.$inferSelect;
export type PluginConfigInsert = typeof plugin_configs.$inferInsert;
export type ActivityRow = typeof plugin_activity_logs.$inferSelect;

export async function listPluginConfigs(db: Db, projectId: number, page: Page) {
  const where = and(eq(plugin_configs.project_id, projectId), eq(plugin_configs.deleted, false));
  const [count, rows] = await Promise.all([
    countWhere(db, plugin_configs, where),
    db
      .select()
      .from(plugin_configs)
      .where(where)
      .orderBy(asc(plugin_configs.order), asc(plugin_configs.plugin_id), asc(plugin_configs.id))
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}

export async function getPluginConfig(db: Db, projectId: number, id: number): Promise<PluginConfigRow | undefined> {
  const [row] = await db
    .select()
    .from(plugin_configs)
    .where(and(eq(plugin_configs.project_id, projectId), eq(plugin_configs.id, id)))
    .limit(1);
  return row;
}

export async function insertPluginConfig(db: Db, values: PluginConfigInsert): Promise<PluginConfigRow> {
  const [row] = await db.insert(plugin_configs).values(values).returning();
  return row!;
}

export async function updatePluginConfig(db: Db, id: number, values: Partial<PluginConfigInsert>): Promise<PluginConfigRow> {
  const [row] = await db
    .update(plugin_configs)
    .set({ ...values, updated_at: sql`now()` })
    .where(eq(plugin_configs.id, id))
    .returning();
  return row!;
}

/**
 * The organization's enabled configs that send data out: global transformations (and global plugins
 * without capabilities) and its own capability-less frontend apps are left out (reference §5).
 */
export async function exportConfigs(db: Db, organizationId: string): Promise<PluginConfigRow[]> {
  const caps = sql`coalesce(${plugins.capabilities}, '{}'::jsonb)`;
  const empty = sql`${caps} = '{}'::jsonb`;
  const allowed: SQL = or(
    and(eq(plugins.is_global, true), or(sql`(${caps} -> 'methods') @> '["processEvent"]'::jsonb`, empty)),
    and(eq(plugins.is_global, false), empty),
  )!;
  const rows = await db
    .select({ config: plugin_configs })
    .from(plugin_configs)
    .innerJoin(projects, eq(projects.id, plugin_configs.project_id))
    .innerJoin(plugins, eq(plugins.id, plugin_configs.plugin_id))
    .where(and(eq(projects.organization_id, organizationId), eq(plugin_configs.enabled, true), sql`not (${allowed})`))
    .orderBy(asc(plugin_configs.id));
  return rows.map((r) => r.config);
}

export interface ActivityInput {
  organization_id: string;
  project_id?: number | null;
  user_id: number | null;
  activity: 'created' | 'updated' | 'deleted';
  scope: 'Plugin' | 'PluginConfig';
  item_id: number | string;
  detail: ActivityDetail;
}

export async function logActivity(db: Db, entry: ActivityInput): Promise<void> {
  // clock_timestamp, not now(): entries of one transaction still come out in the order they were made.
  await db.insert(plugin_activity_logs).values({ ...entry, item_id: String(entry.item_id), created_at: sql`clock_timestamp()` });
}

export async function activityPage(db: Db, organizationId: string, limit: number, page: number) {
  const where = eq(plugin_activity_logs.organization_id, organizationId);
  const [total, rows] = await Promise.all([
    countWhere(db, plugin_activity_logs, where),
    db
      .select()
      .from(plugin_activity_logs)
      .where(where)
      .orderBy(desc(plugin_activity_logs.created_at), desc(plugin_activity_logs.id))
      .limit(limit)
      .offset((page - 1) * limit),
  ]);
  return { total, rows };
}
