import { secretFields, DESTINATION_TYPES } from '../batch-exports/destination-config.js';
import { sealDestinationSecrets } from '../batch-exports/destination-secrets.js';
import type { Db } from '../db/client.js';
import {
  configsOfSecretPlugins,
  exportsWithPlainSecrets,
  unscopedReplaceDestinationConfig,
  unscopedReplacePluginSettings,
} from './queries.js';
import { sealLegacySettings } from '../plugins/config-secrets.js';
import { secretFields as pluginSecretFields } from '../plugins/serialize.js';
import type { SecretBox } from '../secrets/index.js';

/**
 * Encrypts the secrets stored in plain text before encryption existed: destinations' secret fields,
 * and plugin settings under keys their plugin's schema marks secret. Idempotent, and safe with other
 * processes doing the same or writing the rows meanwhile (a row changed since it was read is left to
 * its writer, which encrypts it itself). Returns how many rows it changed.
 */
export async function sealStoredSecrets(db: Db, box: SecretBox): Promise<{ exports: number; pluginConfigs: number }> {
  const fields = [...new Set(DESTINATION_TYPES.flatMap((t) => [...secretFields(t)]))];
  let exports = 0;
  for (let after: string | null = null; ; ) {
    const rows = await exportsWithPlainSecrets(db, fields, after);
    for (const row of rows) {
      const sealed = sealDestinationSecrets(box, row.destination_type, row.destination_config, {});
      if (JSON.stringify(sealed) !== JSON.stringify(row.destination_config)) {
        if (await unscopedReplaceDestinationConfig(db, row.id, row.destination_config, sealed)) exports++;
      }
    }
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.id;
  }
  let pluginConfigs = 0;
  for (let after = 0; ; ) {
    const rows = await configsOfSecretPlugins(db, after);
    for (const row of rows) {
      const sealed = sealLegacySettings(box, row, pluginSecretFields(row.config_schema));
      if (sealed && (await unscopedReplacePluginSettings(db, row.id, row.config, sealed))) pluginConfigs++;
    }
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.id;
  }
  return { exports, pluginConfigs };
}
