import { csvLine } from '../core/csv.js';

/** A cell's text: lists (and empty objects) as JSON. */
function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/**
 * Nested objects become dotted columns (`properties.$browser`), as PostHog's CSV renderer makes them; lists
 * stay one JSON column here, where that renderer (core/csv.ts) would open them into `.0`, `.1`, ...
 */
export function flatten(
  value: Record<string, unknown>,
  prefix = '',
  out: Record<string, unknown> = {},
): Record<string, unknown> {
  for (const [k, v] of Object.entries(value)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length)
      flatten(v as Record<string, unknown>, name, out);
    else out[name] = v;
  }
  return out;
}

/**
 * A header row and one row per record. `leading` columns come first in the given order, every other
 * column any record has follows in byte order.
 */
export function toCsv(records: Record<string, unknown>[], leading: string[]): string {
  const flat = records.map((r) => flatten(r));
  const rest = new Set<string>();
  for (const r of flat) for (const k of Object.keys(r)) if (!leading.includes(k)) rest.add(k);
  const header = [...leading, ...[...rest].sort()];
  return [csvLine(header), ...flat.map((r) => csvLine(header.map((h) => cell(r[h]))))].join('');
}
