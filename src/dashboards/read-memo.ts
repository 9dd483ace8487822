import type { components } from '../../generated/api.js';
import type { Db } from '../db/client.js';
import type { JsonText } from '../core/json-text.js';

type Dashboard = components['schemas']['Dashboard'];

/**
 * A plain read as this process last presented it to one viewer (with the same overrides and timezone),
 * kept with the version of the rows it was made of (`CachedDashboardView.version`): a read finding the
 * rows at that version answers it again, and PostgreSQL sends none of the rows.
 */
export interface HeldRead {
  version: string;
  /** What the read's permissions came from beside the rows. */
  is_shared: boolean;
  privilege: number | null;
  text: JsonText<Dashboard>;
  /** The cache keys of the answers it served, whose hits a read served from here counts. */
  hits: string[];
}

/** Bounds: a read this large is not kept, and the oldest kept go first beyond the total. */
const MAX_READ_BYTES = 1 << 20;
const MAX_TOTAL_BYTES = 32 << 20;
const held = new WeakMap<Db, { reads: Map<string, HeldRead>; bytes: number }>();

function memoOf(db: Db) {
  let memo = held.get(db);
  if (!memo) held.set(db, (memo = { reads: new Map(), bytes: 0 }));
  return memo;
}

export function heldRead(db: Db, key: string): HeldRead | undefined {
  return held.get(db)?.reads.get(key);
}

export function holdRead(db: Db, key: string, read: HeldRead): void {
  const memo = memoOf(db);
  const before = memo.reads.get(key);
  if (before) {
    memo.reads.delete(key);
    memo.bytes -= before.text.length;
  }
  if (read.text.length > MAX_READ_BYTES) return;
  memo.reads.set(key, read);
  memo.bytes += read.text.length;
  for (const [oldest, r] of memo.reads) {
    if (memo.bytes <= MAX_TOTAL_BYTES) break;
    memo.reads.delete(oldest);
    memo.bytes -= r.text.length;
  }
}
