import type { Db } from './client.js';

/**
 * Drizzle builds a query's SQL text anew on every call, which costs more CPU than PostgreSQL spends
 * answering a lookup by key. A prepared query is built once per database handle and then only bound
 * to values (`sql.placeholder`). Transactions are handles of their own, so inside one the query is
 * built for that transaction only.
 */
export function prepared<Q>(name: string, build: (db: Db, name: string) => Q): (db: Db) => Q {
  const built = new WeakMap<Db, Q>();
  return (db) => {
    let q = built.get(db);
    if (!q) {
      q = build(db, name);
      built.set(db, q);
    }
    return q;
  };
}
