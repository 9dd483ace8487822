import { and, asc, desc, eq, getTableColumns, ilike, inArray, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import {
  plugin_activity_logs,
  plugin_configs,
  plugin_log_entries,
  plugins,
  projects,
  type ActivityDetail,
} from '../db/schema/index.js';
import type { Page } from '../core/paging.js';
import { countWhere } from '../db/queries/util.js';

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

/** Undefined when the config is not the project's. */
export async function updatePluginConfig(
  db: Db,
  projectId: number,
  id: number,
  values: Partial<PluginConfigInsert>,
): Promise<PluginConfigRow | undefined> {
  const [row] = await db
    .update(plugin_configs)
    .set({ ...values, updated_at: sql`now()` })
    .where(and(eq(plugin_configs.id, id), eq(plugin_configs.project_id, projectId)))
    .returning();
  return row;
}

/**
 * The organization's enabled configs that send data out: global transformations (and global plugins
 * without capabilities) and its own capability-less frontend apps are left out.
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
  await db
    .insert(plugin_activity_logs)
    .values({ ...entry, item_id: String(entry.item_id), created_at: sql`clock_timestamp()` });
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

export type PluginLogRow = typeof plugin_log_entries.$inferSelect & { ts: string };
export type PluginLogInsert = Omit<typeof plugin_log_entries.$inferInsert, 'id' | 'timestamp'>;

export async function insertPluginLogs(db: Db, entries: PluginLogInsert[]): Promise<void> {
  // One write's entries share the transaction's now(); a microsecond apart they keep their order.
  if (entries.length) {
    await db
      .insert(plugin_log_entries)
      .values(entries.map((e, i) => ({ ...e, timestamp: sql`now() + ${i} * interval '1 microsecond'` })));
  }
}

export interface PluginLogFilter {
  types: string[];
  search?: string;
  after?: string;
  before?: string;
}

/** One config's log entries within its project, newest first. */
export async function listPluginLogs(
  db: Db,
  projectId: number,
  configId: number,
  filter: PluginLogFilter,
  page: Page,
): Promise<{ count: number; rows: PluginLogRow[] }> {
  const l = plugin_log_entries;
  const conditions: SQL[] = [eq(l.project_id, projectId), eq(l.plugin_config_id, configId)];
  if (filter.types.length) conditions.push(inArray(l.type, filter.types));
  if (filter.search) conditions.push(ilike(l.message, `%${filter.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`));
  if (filter.after) conditions.push(sql`${l.timestamp} > ${filter.after}::timestamptz`);
  if (filter.before) conditions.push(sql`${l.timestamp} < ${filter.before}::timestamptz`);
  const where = and(...conditions);
  const [count, rows] = await Promise.all([
    countWhere(db, l, where),
    db
      .select({
        ...getTableColumns(l),
        ts: sql<string>`to_char(${l.timestamp} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
      })
      .from(l)
      .where(where)
      .orderBy(desc(l.timestamp), desc(l.id))
      .limit(page.limit)
      .offset(page.offset),
  ]);
  return { count, rows };
}
