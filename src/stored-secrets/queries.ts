// The start-up pass that encrypts secrets written before encryption existed. It works across every
// tenant on purpose (like the export scheduler), and each write only applies if the row is still as read.
import { and, asc, eq, gt, sql } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { batch_exports, plugin_configs, plugins } from '../db/schema/index.js';

const ENCRYPTED = 'enc:v1:%';
const BATCH = 500;

/** Exports with a non-empty string under one of `fields` that is not encrypted, after id `after`. */
export async function exportsWithPlainSecrets(db: Db, fields: string[], after: string | null) {
  return db
    .select({
      id: batch_exports.id,
      destination_type: batch_exports.destination_type,
      destination_config: batch_exports.destination_config,
    })
    .from(batch_exports)
    .where(
      and(
        after === null ? undefined : gt(batch_exports.id, after),
        sql`exists (select 1 from jsonb_each(${batch_exports.destination_config}) e
          where e.key = any(${sql.param(fields)}) and jsonb_typeof(e.value) = 'string'
            and e.value #>> '{}' <> '' and e.value #>> '{}' not like ${ENCRYPTED})`,
      ),
    )
    .orderBy(asc(batch_exports.id))
    .limit(BATCH);
}

/** Unscoped: this pass seals every tenant's stored secrets at start-up; ids come from the scan above. */
export async function unscopedReplaceDestinationConfig(
  db: Db,
  id: string,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): Promise<boolean> {
  const rows = await db
    .update(batch_exports)
    .set({ destination_config: after })
    .where(and(eq(batch_exports.id, id), sql`${batch_exports.destination_config} = ${JSON.stringify(before)}::jsonb`))
    .returning({ id: batch_exports.id });
  return rows.length > 0;
}

/** Configs with settings, of plugins whose schema mentions secrets, after id `after`. */
export async function configsOfSecretPlugins(db: Db, after: number) {
  return db
    .select({
      id: plugin_configs.id,
      config: plugin_configs.config,
      secrets: plugin_configs.secrets,
      config_schema: plugins.config_schema,
    })
    .from(plugin_configs)
    .innerJoin(plugins, eq(plugins.id, plugin_configs.plugin_id))
    .where(
      and(
        gt(plugin_configs.id, after),
        sql`${plugin_configs.config} <> '{}'::jsonb`,
        sql`${plugins.config_schema}::text like '%"secret"%'`,
      ),
    )
    .orderBy(asc(plugin_configs.id))
    .limit(BATCH);
}

/** Unscoped, as `unscopedReplaceDestinationConfig`. */
export async function unscopedReplacePluginSettings(
  db: Db,
  id: number,
  before: Record<string, unknown>,
  after: { config: Record<string, unknown>; secrets: Record<string, string> },
): Promise<boolean> {
  const rows = await db
    .update(plugin_configs)
    .set(after)
    .where(and(eq(plugin_configs.id, id), sql`${plugin_configs.config} = ${JSON.stringify(before)}::jsonb`))
    .returning({ id: plugin_configs.id });
  return rows.length > 0;
}
