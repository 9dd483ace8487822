/** RFC 4180: CRLF line ends; a field holding a comma, quote or line break is quoted, quotes doubled. */
function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Nested objects become dotted columns (`properties.$browser`), as PostHog's CSV renderer does; lists stay JSON. */
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
  const lines = [header.map(cell).join(',')];
  for (const r of flat) lines.push(header.map((h) => cell(r[h])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
