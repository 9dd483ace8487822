import { mapInTurns } from './turns.js';

/** One CSV line as Python's csv writer writes it (RFC 4180 quoting; a lone empty field is quoted). */
export function csvLine(cells: readonly string[]): string {
  if (cells.length === 1 && cells[0] === '') return '""\r\n';
  return `${cells.map((c) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(',')}\r\n`;
}

/** A JSON value as Python's `str()` prints it in a CSV cell: None empty, booleans `True`/`False`. */
export function pythonText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (value === true) return 'True';
  if (value === false) return 'False';
  return String(value);
}

/**
 * rest_framework_csv's `flatten_item`: objects and lists open into dotted columns (`a.b`, `tags.0`), an
 * empty one leaves no column, anything else is the column itself (the empty name at the top).
 */
export function flatten(value: unknown, prefix: string, out: Map<string, unknown>): void {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) flatten(item, prefix ? `${prefix}.${i}` : String(i), out);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, item] of Object.entries(value)) flatten(item, prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.set(prefix, value);
  }
}

/**
 * rows as PostHog's CSV renderer (rest_framework_csv's CSVRenderer) writes them: a header of every column
 * any row has, sorted, then one line per row. No rows is an empty text, without a header. Written in turns,
 * so a list of thousands of rows lets other requests through.
 */
export async function renderCsvRows(rows: readonly unknown[]): Promise<string> {
  if (!rows.length) return '';
  const flat = await mapInTurns(rows, (row) => {
    const cells = new Map<string, unknown>();
    flatten(row, '', cells);
    return cells;
  });
  const columns = new Set<string>();
  for (const cells of flat) for (const name of cells.keys()) columns.add(name);
  const header = [...columns].sort();
  const lines = await mapInTurns(flat, (cells) => csvLine(header.map((name) => pythonText(cells.get(name)))));
  return csvLine(header) + lines.join('');
}
