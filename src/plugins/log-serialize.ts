import type { components } from '../../generated/api.js';
import type { PluginLogRow } from './config-queries.js';

type Entry = components['schemas']['PluginLogEntry'];

export function serializePluginLog(r: PluginLogRow): Entry {
  return {
    id: r.id,
    team_id: r.project_id,
    plugin_id: r.plugin_id,
    plugin_config_id: r.plugin_config_id,
    timestamp: r.ts,
    source: r.source as Entry['source'],
    type: r.type as Entry['type'],
    message: r.message,
    instance_id: r.instance_id,
  };
}
