import { randomUUID } from 'node:crypto';
import type { PluginConfigRow, PluginLogInsert } from './config-queries.js';

export const NOT_RUN_WARNING = 'Plugin code does not run on this server: no events pass through this plugin.';

/**
 * The plugin log entries a write to a config produces. PostHog's plugin server logs a config's
 * loading and unloading; this server runs no plugin code, so it logs (as SYSTEM) what it does do:
 * the config's creation, enabling, disabling, new settings and deletion. `changedSettings` are the
 * setting keys the write changed (secret ones included by name only).
 */
export function configLogEntries(
  before: PluginConfigRow | null,
  after: PluginConfigRow,
  changedSettings: string[],
): PluginLogInsert[] {
  const instance_id = randomUUID();
  const base = {
    project_id: after.project_id,
    plugin_config_id: after.id,
    plugin_id: after.plugin_id,
    source: 'SYSTEM',
    instance_id,
  };
  const out: PluginLogInsert[] = [];
  const add = (type: string, message: string) => out.push({ ...base, type, message });
  if (!before) add('INFO', `Plugin config created (${after.enabled ? 'enabled' : 'disabled'}).`);
  if (changedSettings.length) add('INFO', `Plugin settings changed: ${changedSettings.join(', ')}.`);
  if (after.deleted && !before?.deleted) add('INFO', 'Plugin config deleted.');
  else if (before && before.enabled !== after.enabled)
    add('INFO', after.enabled ? 'Plugin enabled.' : 'Plugin disabled.');
  if (after.enabled && !before?.enabled) add('WARN', NOT_RUN_WARNING);
  return out;
}
