import { and, asc, eq, getTableColumns, inArray, notInArray, or, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { organizations, plugin_configs, plugin_source_files, plugins, projects } from '../db/schema/index.js';
import type { Page } from '../core/paging.js';

export type PluginRow = typeof plugins.$inferSelect;
export type PluginInsert = typeof plugins.$inferInsert;
export type PluginWithOrg = PluginRow & { organization_name: string | null };

export const FAMILIES = [
  'pipeline_destinations',
  'pipeline_frontend_apps',
  'pipeline_import_apps',
  'pipeline_transformations',
] as const;
export type Family = (typeof FAMILIES)[number];

const caps = sql`coalesce(${plugins.capabilities}, '{}'::jsonb)`;
const hasMethod = (m: string) => sql`(${caps} -> 'methods') @> ${JSON.stringify([m])}::jsonb`;

/** Which plugins a family shows, by `capabilities` exactly as PostHog filters them. */
export function familyWhere(family: Family): SQL {
  switch (family) {
    case 'pipeline_transformations':
      return sql`(${caps} ? 'methods' and ${hasMethod('processEvent')})`;
    case 'pipeline_destinations':
      return sql`(${caps} ? 'methods' and (${hasMethod('onEvent')} or ${hasMethod('composeWebhook')}))`;
    case 'pipeline_frontend_apps':
      return sql`not (${caps} ? 'methods' or ${caps} ? 'scheduled_tasks')`;
    case 'pipeline_import_apps': {
      const handlesEvents = sql.join(
        ['onEvent', 'composeWebhook', 'processEvent'].map((m) => hasMethod(m)),
        sql` or `,
      );
      return sql`((${caps} ? 'scheduled_tasks' and (${caps} -> 'scheduled_tasks') <> '[]'::jsonb)
        or (${caps} ? 'methods' and not coalesce(${handlesEvents}, false)))`;
    }
  }
}

/** Plugins an organization sees: its own, global ones, and ones configured in its projects. */
export function visibleWhere(organizationId: string): SQL {
  return or(
    eq(plugins.organization_id, organizationId),
    eq(plugins.is_global, true),
    inArray(
      plugins.id,
      sql`(select ${plugin_configs.plugin_id} from ${plugin_configs}
        join ${projects} on ${projects.id} = ${plugin_configs.project_id}
        where ${projects.organization_id} = ${organizationId} and not ${plugin_configs.deleted})`,
    ),
  )!;
}

const withOrg = { ...getTableColumns(plugins), organization_name: organizations.name };

function select(db: Db) {
  return db.select(withOrg).from(plugins).leftJoin(organizations, eq(organizations.id, plugins.organization_id));
}

export async function listPlugins(db: Db, organizationId: string, family: Family, page: Page) {
  const where = and(visibleWhere(organizationId), familyWhere(family));
  const [counted, rows] = await Promise.all([
    db.select({ n: sql<number>`count(*)::int` }).from(plugins).where(where),
    select(db).where(where).orderBy(asc(plugins.id)).limit(page.limit).offset(page.offset),
  ]);
  return { count: counted[0]?.n ?? 0, rows: rows as PluginWithOrg[] };
}

/** One plugin as the organization sees it in a family, else undefined (a 404). */
export async function getVisiblePlugin(db: Db, organizationId: string, family: Family, id: number) {
  const [row] = await select(db)
    .where(and(eq(plugins.id, id), visibleWhere(organizationId), familyWhere(family)))
    .limit(1);
  return row as PluginWithOrg | undefined;
}

export async function getPluginWithOrg(db: Db, id: number): Promise<PluginWithOrg | undefined> {
  const [row] = await select(db).where(eq(plugins.id, id)).limit(1);
  return row as PluginWithOrg | undefined;
}

/** Several plugins by id, in one query (for lists of plugin configs). */
export async function getPluginsWithOrg(db: Db, ids: number[]): Promise<Map<number, PluginWithOrg>> {
  if (!ids.length) return new Map();
  const rows = (await select(db).where(inArray(plugins.id, [...new Set(ids)]))) as PluginWithOrg[];
  return new Map(rows.map((p) => [p.id, p]));
}

/** Whether a plugin is visible to the organization at all, whatever its family. */
export async function isPluginVisible(db: Db, organizationId: string, id: number): Promise<boolean> {
  const [row] = await db
    .select({ id: plugins.id })
    .from(plugins)
    .where(and(eq(plugins.id, id), visibleWhere(organizationId)))
    .limit(1);
  return !!row;
}

/** Whether the organization already installed a plugin from this url (any `?private_token=` aside). */
export async function urlInstalled(db: Db, organizationId: string, urlRoot: string): Promise<boolean> {
  const escaped = urlRoot.replace(/[\\%_]/g, (c) => `\\${c}`);
  const [row] = await db
    .select({ id: plugins.id })
    .from(plugins)
    .where(
      and(
        eq(plugins.organization_id, organizationId),
        or(eq(plugins.url, urlRoot), sql`${plugins.url} like ${`${escaped}?%`}`),
      ),
    )
    .limit(1);
  return !!row;
}

export async function insertPlugin(db: Db, values: PluginInsert): Promise<PluginRow> {
  const [row] = await db.insert(plugins).values(values).returning();
  return row!;
}

/** Writes reach only the organization's own plugins: a visible global plugin of another one is read-only. */
const owned = (organizationId: string, id: number) =>
  and(eq(plugins.id, id), eq(plugins.organization_id, organizationId));
const ownedIds = (organizationId: string) =>
  sql`(select ${plugins.id} from ${plugins} where ${plugins.organization_id} = ${organizationId})`;

export async function updatePlugin(
  db: Db,
  organizationId: string,
  id: number,
  values: Partial<PluginInsert>,
): Promise<PluginRow | undefined> {
  const [row] = await db
    .update(plugins)
    .set({ ...values, updated_at: sql`now()` })
    .where(owned(organizationId, id))
    .returning();
  return row;
}

export async function deletePlugin(db: Db, organizationId: string, id: number): Promise<boolean> {
  const rows = await db.delete(plugins).where(owned(organizationId, id)).returning({ id: plugins.id });
  return rows.length > 0;
}

export async function getSourceFiles(db: Db, pluginId: number): Promise<Record<string, string>> {
  const rows = await db
    .select({ filename: plugin_source_files.filename, source: plugin_source_files.source })
    .from(plugin_source_files)
    .where(eq(plugin_source_files.plugin_id, pluginId))
    .orderBy(asc(plugin_source_files.filename));
  return Object.fromEntries(rows.map((r) => [r.filename, r.source]));
}

/** Writes or deletes (`null`) the named files, leaving the others; false when the plugin is not the organization's. */
export async function writeSourceFiles(
  db: Db,
  organizationId: string,
  pluginId: number,
  changes: Record<string, string | null>,
): Promise<boolean> {
  // An insert cannot filter by a where clause: the plugin's owner is checked first, in the caller's transaction.
  const [own] = await db.select({ id: plugins.id }).from(plugins).where(owned(organizationId, pluginId)).limit(1);
  if (!own) return false;
  const deleted = Object.keys(changes).filter((f) => changes[f] === null);
  const written = Object.entries(changes).filter((e): e is [string, string] => e[1] !== null);
  if (deleted.length) {
    await db
      .delete(plugin_source_files)
      .where(
        and(
          eq(plugin_source_files.plugin_id, pluginId),
          inArray(plugin_source_files.plugin_id, ownedIds(organizationId)),
          inArray(plugin_source_files.filename, deleted),
        ),
      );
  }
  if (written.length) {
    await db
      .insert(plugin_source_files)
      .values(written.map(([filename, source]) => ({ plugin_id: pluginId, filename, source })))
      .onConflictDoUpdate({
        target: [plugin_source_files.plugin_id, plugin_source_files.filename],
        set: { source: sql`excluded.source`, updated_at: sql`now()` },
      });
  }
  return true;
}

/** Replaces all of a plugin's files with these; false when the plugin is not the organization's. */
export async function replaceSourceFiles(
  db: Db,
  organizationId: string,
  pluginId: number,
  files: Record<string, string>,
): Promise<boolean> {
  const keep = Object.keys(files);
  await db
    .delete(plugin_source_files)
    .where(
      and(
        eq(plugin_source_files.plugin_id, pluginId),
        inArray(plugin_source_files.plugin_id, ownedIds(organizationId)),
        keep.length ? notInArray(plugin_source_files.filename, keep) : undefined,
      ),
    );
  return writeSourceFiles(db, organizationId, pluginId, files);
}

/** Ids of the family's visible plugins that no project anywhere has enabled. */
export async function unusedPluginIds(db: Db, organizationId: string, family: Family): Promise<number[]> {
  const configs = plugin_configs;
  const rows = await db
    .select({ id: plugins.id })
    .from(plugins)
    .where(
      and(
        visibleWhere(organizationId),
        familyWhere(family),
        sql`not exists (select 1 from ${configs} where ${configs.plugin_id} = ${plugins.id} and ${configs.enabled})`,
      ),
    )
    .orderBy(asc(plugins.id));
  return rows.map((r) => r.id);
}
