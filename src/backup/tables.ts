import type { TransactionSql } from 'postgres';

/** The schema our migrations own. The job queue's (pgboss) is rebuilt by the server at start. */
export const SCHEMA = 'public';

export interface TableInfo {
  name: string;
  columns: string[];
}

/** Tables parents first (by foreign keys), so a restore's rows always find what they reference. */
export async function tablesInOrder(sql: TransactionSql): Promise<TableInfo[]> {
  const rows = await sql<{ name: string; columns: string[] }[]>`
    select c.relname as name,
           array_agg(a.attname order by a.attnum) filter (where a.attgenerated = '') as columns
    from pg_class c
    join pg_namespace n on n.oid = c.relnamespace
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
    where n.nspname = ${SCHEMA} and c.relkind in ('r', 'p') and not c.relispartition
    group by c.relname`;
  const deps = await sql<{ child: string; parent: string }[]>`
    select c.relname as child, p.relname as parent
    from pg_constraint k
    join pg_class c on c.oid = k.conrelid
    join pg_class p on p.oid = k.confrelid
    join pg_namespace n on n.oid = c.relnamespace
    where k.contype = 'f' and n.nspname = ${SCHEMA} and c.relname <> p.relname`;
  const byName = new Map(rows.map((r) => [r.name, r]));
  const ordered: TableInfo[] = [];
  const done = new Set<string>();
  const visit = (name: string, path: Set<string>) => {
    if (done.has(name) || path.has(name)) return;
    path.add(name);
    for (const d of deps) if (d.child === name) visit(d.parent, path);
    done.add(name);
    const t = byName.get(name);
    if (t) ordered.push({ name: t.name, columns: t.columns });
  };
  for (const name of [...byName.keys()].sort()) visit(name, new Set());
  return ordered;
}

/** The sequences of our schema, with the tables' identity and serial columns among them. */
export async function sequences(sql: TransactionSql): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${SCHEMA} and c.relkind = 'S' order by 1`;
  return rows.map((r) => r.name);
}

/** Double-quoted, so any table or column name is one identifier. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The one row a query of an aggregate answers. */
export function first<T>(rows: readonly T[]): T {
  const row = rows[0];
  if (row === undefined) throw new Error('the query answered no row');
  return row;
}
