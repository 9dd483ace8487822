import { csvLine, flatten, pythonText } from '../core/csv.js';
import { mapInTurns } from '../core/turns.js';

/**
 * A header row and one row per record, each value written as PostHog's CSV renderer writes it: nested
 * objects and lists open into dotted columns (`properties.$browser`, `properties.tags.0`), booleans are
 * `True`/`False`, null is empty. `leading` columns (and the columns they opened into) come first in the
 * given order, every other column any record has follows in byte order, as that renderer sorts them.
 * Written in turns, so thousands of events let other requests through.
 */
export async function toCsv(records: Record<string, unknown>[], leading: string[]): Promise<string> {
  const flat = await mapInTurns(records, (record) => {
    const cells = new Map<string, unknown>();
    for (const [name, value] of Object.entries(record)) flatten(value, name, cells);
    return cells;
  });
  const names = new Set<string>();
  for (const cells of flat) for (const name of cells.keys()) names.add(name);
  const sorted = [...names].sort();
  const header: string[] = [];
  for (const lead of leading) {
    const opened = sorted.filter((name) => name.startsWith(`${lead}.`) && names.has(name));
    // A leading column stays, empty, when no record has a value for it.
    if (names.delete(lead) || !opened.length) header.push(lead);
    for (const name of opened) if (names.delete(name)) header.push(name);
  }
  header.push(...sorted.filter((name) => names.has(name)));
  const lines = await mapInTurns(flat, (cells) => csvLine(header.map((h) => pythonText(cells.get(h)))));
  return csvLine(header) + lines.join('');
}
