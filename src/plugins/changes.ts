import type { ActivityChange } from '../db/schema/index.js';
import { SECRET_FIELD_VALUE } from './serialize.js';

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** One change per listed field whose value differs between two rows read from the database. */
export function fieldChanges<T extends object>(
  type: ActivityChange['type'],
  before: T,
  after: T,
  fields: readonly (keyof T & string)[],
): ActivityChange[] {
  return fields
    .filter((f) => !same(before[f], after[f]))
    .map((f) => ({ type, action: 'changed', field: f, before: before[f] ?? null, after: after[f] ?? null }));
}

/** Changes of a plugin config's settings, key by key, with secret values masked. */
export function configChanges(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  secrets: Set<string>,
): ActivityChange[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const shown = (key: string, v: unknown) => (v === undefined ? null : secrets.has(key) ? SECRET_FIELD_VALUE : v);
  return keys
    .filter((k) => !same(before[k], after[k]) || k in before !== k in after)
    .map((k) => ({
      type: 'PluginConfig',
      action: !(k in before) ? 'created' : !(k in after) ? 'deleted' : 'changed',
      field: `config.${k}`,
      before: shown(k, before[k]),
      after: shown(k, after[k]),
    }));
}

/** Changes of a plugin's files: which were created, changed or deleted (contents are left out). */
export function fileChanges(before: Record<string, string>, after: Record<string, string>): ActivityChange[] {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return names
    .filter((n) => before[n] !== after[n])
    .map((n) => ({
      type: 'Plugin',
      action: before[n] === undefined ? 'created' : after[n] === undefined ? 'deleted' : 'changed',
      field: n,
      before: null,
      after: null,
    }));
}
