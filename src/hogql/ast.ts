/** HogQL queries as the Query API reads them: a SELECT over the project's tables. */
export type Scalar = string | number | boolean | null;

export type Node =
  | { k: 'const'; value: Scalar; pos: number }
  | { k: 'field'; chain: string[]; pos: number }
  | {
      k: 'call';
      name: string;
      args: Node[];
      distinct: boolean;
      star: boolean;
      pos: number;
      over?: Over;
      /** A parametric aggregate's parameters: `quantile(0.9)(x)`. */
      params?: Node[];
    }
  | { k: 'array'; items: Node[]; pos: number }
  | { k: 'lambda'; params: string[]; body: Node; pos: number }
  | { k: 'index'; arr: Node; index: Node; pos: number }
  /** A scalar subquery: `(select max(timestamp) from events)`. */
  | { k: 'subquery'; query: Query; pos: number }
  | { k: 'binop'; op: string; left: Node; right: Node; pos: number }
  | { k: 'and' | 'or'; args: Node[]; pos: number }
  | { k: 'not' | 'neg'; arg: Node; pos: number }
  | { k: 'in'; left: Node; list: Node[] | null; sub: Query | null; negated: boolean; pos: number }
  | { k: 'isnull'; arg: Node; negated: boolean; pos: number }
  | { k: 'between'; arg: Node; low: Node; high: Node; negated: boolean; pos: number }
  | { k: 'interval'; value: Node; unit: string; pos: number }
  | { k: 'case'; branches: [Node, Node][]; otherwise: Node | null; pos: number }
  | { k: 'star'; table: string | null; pos: number }
  | { k: 'placeholder'; name: string; pos: number }
  /** Built by the EventsQuery only, never parsed: the whole event or its person as one JSON object. */
  | { k: 'object'; of: 'event' | 'person'; pos: number };

export interface FrameBound {
  type: 'CURRENT ROW' | 'PRECEDING' | 'FOLLOWING';
  /** Rows (or range units) before or after; null is UNBOUNDED. */
  value: number | null;
}

export interface WindowSpec {
  partitionBy: Node[];
  orderBy: { expr: Node; desc: boolean }[];
  frame: { method: 'ROWS' | 'RANGE'; start: FrameBound; end: FrameBound | null } | null;
}

/** A window function's OVER: a window of its own, or the name of one in the query's WINDOW clause. */
export type Over = WindowSpec | { name: string };

export interface Column {
  expr: Node;
  alias: string | null;
}

export type FromItem =
  | { k: 'table'; name: string; alias: string | null; pos: number }
  | { k: 'subquery'; query: Query; alias: string | null; pos: number };

export interface Join {
  type: 'INNER' | 'LEFT' | 'RIGHT' | 'FULL' | 'CROSS';
  item: FromItem;
  on: Node | null;
}

/** `WITH name AS (query)`, or ClickHouse's `WITH expr AS name` (an alias every column may use). */
export type Cte = { name: string; query: Query; pos: number } | { name: string; expr: Node; pos: number };

export interface Select {
  ctes?: Cte[];
  windows?: Record<string, WindowSpec>;
  distinct: boolean;
  columns: Column[];
  from: FromItem | null;
  joins: Join[];
  where: Node | null;
  groupBy: Node[];
  having: Node | null;
  orderBy: { expr: Node; desc: boolean }[];
  limit: Node | null;
  /** `LIMIT n WITH TIES`: also the rows that tie with the last one by ORDER BY. */
  withTies?: boolean;
  offset: Node | null;
}

/** `a UNION ALL b ...`: the operators join the queries in order. */
export interface SetQuery {
  k: 'set';
  queries: Query[];
  ops: ('UNION ALL' | 'UNION DISTINCT' | 'INTERSECT' | 'EXCEPT')[];
}

export type Query = Select | SetQuery;

export const isSet = (q: Query): q is SetQuery => (q as SetQuery).k === 'set';

const IDENT = /^[A-Za-z_$][\w$]*$/;

const quoteString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
// PostHog's parser reads a backtick inside a quoted identifier only doubled.
const ident = (s: string) => (IDENT.test(s) ? s : `\`${s.replace(/\\/g, '\\\\').replace(/`/g, '``')}\``);

/** Canonical HogQL for a node, used for column names and the answer's `hogql`. */
export function print(n: Node): string {
  switch (n.k) {
    case 'const':
      return n.value === null ? 'NULL' : typeof n.value === 'string' ? quoteString(n.value) : String(n.value);
    case 'field':
      return n.chain.map(ident).join('.');
    case 'call': {
      const params = n.params ? `(${n.params.map(print).join(', ')})` : '';
      const args = n.star ? '*' : n.args.map(print).join(', ');
      const call = `${n.name}${params}(${n.distinct ? 'DISTINCT ' : ''}${args})`;
      if (!n.over) return call;
      return `${call} OVER ${'name' in n.over ? ident(n.over.name) : `(${printWindow(n.over)})`}`;
    }
    case 'array':
      return `[${n.items.map(print).join(', ')}]`;
    case 'lambda': {
      const params = n.params.length === 1 ? ident(n.params[0]!) : `(${n.params.map(ident).join(', ')})`;
      return `${params} -> ${print(n.body)}`;
    }
    case 'index':
      return `${wrap(n.arr)}[${print(n.index)}]`;
    case 'subquery':
      return `(${printQuery(n.query)})`;
    case 'binop':
      return `${wrap(n.left)} ${n.op} ${wrap(n.right)}`;
    case 'and':
    case 'or':
      return n.args.map(wrap).join(` ${n.k.toUpperCase()} `);
    case 'not':
      return `NOT ${wrap(n.arg)}`;
    case 'neg':
      return `-${wrap(n.arg)}`;
    case 'in': {
      const set = n.sub ? printQuery(n.sub) : n.list!.map(print).join(', ');
      return `${wrap(n.left)} ${n.negated ? 'NOT IN' : 'IN'} (${set})`;
    }
    case 'isnull':
      return `${wrap(n.arg)} IS ${n.negated ? 'NOT NULL' : 'NULL'}`;
    case 'between':
      return `${wrap(n.arg)} ${n.negated ? 'NOT BETWEEN' : 'BETWEEN'} ${wrap(n.low)} AND ${wrap(n.high)}`;
    case 'interval':
      return `INTERVAL ${wrap(n.value)} ${n.unit}`;
    case 'case': {
      const branches = n.branches.map(([c, v]) => `WHEN ${print(c)} THEN ${print(v)}`).join(' ');
      return `CASE ${branches}${n.otherwise ? ` ELSE ${print(n.otherwise)}` : ''} END`;
    }
    case 'star':
      return n.table ? `${ident(n.table)}.*` : '*';
    case 'placeholder':
      return `{${n.name}}`;
    case 'object':
      return n.of === 'event' ? '*' : 'person';
  }
}

function wrap(n: Node): string {
  const simple =
    n.k === 'const' ||
    n.k === 'field' ||
    n.k === 'call' ||
    n.k === 'placeholder' ||
    n.k === 'star' ||
    n.k === 'case' ||
    n.k === 'array' ||
    n.k === 'index' ||
    n.k === 'subquery';
  return simple ? print(n) : `(${print(n)})`;
}

function printFrom(f: FromItem): string {
  const alias = f.alias ? ` AS ${ident(f.alias)}` : '';
  return f.k === 'table' ? `${ident(f.name)}${alias}` : `(${printQuery(f.query)})${alias}`;
}

function printBound(b: FrameBound): string {
  if (b.type === 'CURRENT ROW') return b.type;
  return `${b.value === null ? 'UNBOUNDED' : b.value} ${b.type}`;
}

export function printWindow(w: WindowSpec): string {
  const parts: string[] = [];
  if (w.partitionBy.length) parts.push(`PARTITION BY ${w.partitionBy.map(print).join(', ')}`);
  if (w.orderBy.length)
    parts.push(`ORDER BY ${w.orderBy.map((o) => `${print(o.expr)} ${o.desc ? 'DESC' : 'ASC'}`).join(', ')}`);
  if (w.frame) {
    const { method, start, end } = w.frame;
    parts.push(
      end ? `${method} BETWEEN ${printBound(start)} AND ${printBound(end)}` : `${method} ${printBound(start)}`,
    );
  }
  return parts.join(' ');
}

export function printQuery(q: Query): string {
  if (!isSet(q)) return printSelect(q);
  return q.queries
    .map((x, i) => `${i ? `${q.ops[i - 1]} ` : ''}${isSet(x) ? `(${printQuery(x)})` : printSelect(x)}`)
    .join(' ');
}

export function printSelect(s: Select): string {
  const columns = s.columns.map((c) => (c.alias ? `${print(c.expr)} AS ${ident(c.alias)}` : print(c.expr)));
  const parts: string[] = [];
  if (s.ctes?.length)
    parts.push(
      `WITH ${s.ctes
        .map((c) =>
          'query' in c ? `${ident(c.name)} AS (${printQuery(c.query)})` : `${print(c.expr)} AS ${ident(c.name)}`,
        )
        .join(', ')}`,
    );
  parts.push(`SELECT ${s.distinct ? 'DISTINCT ' : ''}${columns.join(', ')}`);
  if (s.from) parts.push(`FROM ${printFrom(s.from)}`);
  for (const j of s.joins) parts.push(`${j.type} JOIN ${printFrom(j.item)}${j.on ? ` ON ${print(j.on)}` : ''}`);
  if (s.where) parts.push(`WHERE ${print(s.where)}`);
  if (s.groupBy.length) parts.push(`GROUP BY ${s.groupBy.map(print).join(', ')}`);
  if (s.having) parts.push(`HAVING ${print(s.having)}`);
  const windows = Object.entries(s.windows ?? {});
  if (windows.length) parts.push(`WINDOW ${windows.map(([n, w]) => `${ident(n)} AS (${printWindow(w)})`).join(', ')}`);
  if (s.orderBy.length)
    parts.push(`ORDER BY ${s.orderBy.map((o) => `${print(o.expr)} ${o.desc ? 'DESC' : 'ASC'}`).join(', ')}`);
  if (s.limit) parts.push(`LIMIT ${print(s.limit)}${s.withTies ? ' WITH TIES' : ''}`);
  if (s.offset) parts.push(`OFFSET ${print(s.offset)}`);
  return parts.join(' ');
}
