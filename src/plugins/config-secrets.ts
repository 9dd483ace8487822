import type { SecretBox } from '../secrets/index.js';
import { SECRET_FIELD_VALUE } from './serialize.js';

/** A plugin config's settings as stored: plain `config`, and `secrets` encrypted by key. */
export interface StoredSettings {
  config: Record<string, unknown>;
  secrets: Record<string, string>;
}

/** Secret keys of a stored config: those the schema marks now, and those that were ever stored as secret. */
export function secretKeys(stored: StoredSettings, schemaSecrets: Set<string>): Set<string> {
  return new Set([...schemaSecrets, ...Object.keys(stored.secrets)]);
}

/** Settings as the activity log compares them: every key, secrets as their ciphertext. */
export const allSettings = (s: StoredSettings): Record<string, unknown> => ({ ...s.config, ...s.secrets });

/**
 * Splits the settings a request sent into what is stored in the clear and what is encrypted. A secret
 * sent as null, left out, or sent back masked keeps its stored value, so a client can PATCH back what
 * it read; an empty value clears it. A secret stored in `config` before encryption existed moves into
 * `secrets` on this write. Values are encrypted as JSON text, whatever their type.
 */
export function storeSettings(
  box: SecretBox,
  incoming: Record<string, unknown>,
  stored: StoredSettings,
  schemaSecrets: Set<string>,
): StoredSettings {
  const keys = secretKeys(stored, schemaSecrets);
  const out: StoredSettings = { config: {}, secrets: {} };
  const keep = (key: string) => {
    if (stored.secrets[key] !== undefined) out.secrets[key] = stored.secrets[key];
    else if (stored.config[key]) out.secrets[key] = box.seal(JSON.stringify(stored.config[key]));
    else if (key in stored.config) out.config[key] = stored.config[key];
  };
  for (const [key, value] of Object.entries(incoming)) {
    if (!keys.has(key)) out.config[key] = value;
    else if (value === null || value === undefined || value === SECRET_FIELD_VALUE) keep(key);
    else if (value) out.secrets[key] = box.seal(JSON.stringify(value));
    else out.config[key] = value;
  }
  for (const key of keys) if (!(key in incoming)) keep(key);
  return out;
}

/**
 * Moves the secrets of a config written before encryption (plain values under keys the schema marks
 * secret) into `secrets`; undefined when there is nothing to move.
 */
export function sealLegacySettings(
  box: SecretBox,
  stored: StoredSettings,
  schemaSecrets: Set<string>,
): StoredSettings | undefined {
  const legacy = [...schemaSecrets].filter((k) => stored.config[k] && stored.secrets[k] === undefined);
  if (!legacy.length) return undefined;
  const config = { ...stored.config };
  const secrets = { ...stored.secrets };
  for (const key of legacy) {
    secrets[key] = box.seal(JSON.stringify(config[key]));
    delete config[key];
  }
  return { config, secrets };
}
