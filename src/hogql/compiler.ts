import { sql, type SQL } from 'drizzle-orm';
import {
  isSet,
  print,
  printQuery,
  printSelect,
  type Cte,
  type FromItem,
  type Node,
  type Query,
  type Select,
  type WindowSpec,
} from './ast.js';
import { QueryError } from './errors.js';
import { answerableFromCounts, isWholeHourZone } from './rollup.js';
import { arrayOf, callFunction, interval, pgType, WINDOW_ONLY, WINDOW_AGGREGATES } from './functions.js';
import {
  FIELDS,
  objectOf,
  personKey,
  STAR,
  TABLES,
  tableField,
  tableSource,
  countsSource,
  type Binding,
  type TableName,
} from './tables.js';
import {
  clickhouseType,
  coerce,
  common,
  constant,
  inZone,
  outputSql,
  readZone,
  toBool,
  toDateTime,
  toNumber,
  toText,
  type Typed,
} from './types.js';

export interface CompileOptions {
  teamId: number;
  /** Values for `{placeholder}`s: scalars, or lists of scalars for `IN {list}`. */
  values?: Record<string, unknown>;
  defaultLimit?: number;
  maxLimit?: number;
  /** The project's time zone: where days, weeks and months begin (PostHog's team timezone). Default UTC. */
  timezone?: string;
  /** The TimeZone setting the statement runs under, when it has one (a compiled query runs in its timezone). */
  sessionTimezone?: string;
  /** Internal: compiling the query over the counts (`events` read as `event_counts`). */
  counts?: boolean;
}

export interface CompiledQuery {
  /** Rows with one column, `r`: a JSON array of the row's values. One row more than `limit` means there are more. */
  sql: SQL;
  columns: string[];
  /** ClickHouse type names, as PostHog reports them. */
  types: string[];
  hogql: string;
  limit: number;
  offset: number;
  /** The session timezone the statement runs in (its date arithmetic keeps local wall-clock time there). */
  timezone: string;
}

interface Out {
  name: string;
  typed: Typed;
}

/** A CTE as the queries after it see it: its query and the CTEs before it. */
interface CteDef {
  query: Query;
  ctes: Map<string, CteDef>;
  /** Its name in the statement's WITH and its columns, once compiled there (see Compiler.withs). */
  compiled?: { name: string; out: Out[] };
}

interface Scope {
  bindings: Binding[];
  aliases: Map<string, Node>;
  expanding: Set<string>;
  ctes: Map<string, CteDef>;
  windows: Record<string, WindowSpec>;
  /** A lambda's parameters, while its body compiles. */
  locals: Map<string, Typed>;
}

const HIGHER_ORDER = new Set(['arraymap', 'arrayfilter', 'arrayexists', 'arrayall']);

const COMPARE: Record<string, string> = { '=': '=', '!=': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
const LIKE: Record<string, string> = { LIKE: 'like', ILIKE: 'ilike', 'NOT LIKE': 'not like', 'NOT ILIKE': 'not ilike' };
const REGEX: Record<string, string> = { '=~': '~', '!~': '!~', '=~*': '~*', '!~*': '!~*' };
const JOIN: Record<string, string> = {
  INNER: 'inner join',
  LEFT: 'left join',
  RIGHT: 'right join',
  FULL: 'full join',
  CROSS: 'cross join',
};
/** PostgreSQL functions take at most 100 arguments, and the row is built with one. */
const MAX_COLUMNS = 100;
/** Table reads (tables, CTE references, subqueries) of one query: a 30-step funnel reads about 40. */
const MAX_TABLES = 64;
const MAX_LIST = 10_000;
/**
 * Compiled size, counted in bound parameters and nodes. Aliases are compiled again wherever they are
 * used, so `a+a AS b, b+b AS c, ...` grows exponentially; and a statement holds at most 65,535 parameters.
 */
const MAX_COST = 30_000;

class Compiler {
  private aliasCount = 0;
  private tables = 0;
  private cost = 0;
  /**
   * A whole query's CTEs, compiled once each into the statement's own WITH (dependencies first), so that
   * PostgreSQL computes one that is read twice once, as ClickHouse does, and still inlines one read once.
   * Only a whole query has a WITH of ours; in an expression (the events listing's) CTEs are inlined.
   */
  private withs: SQL[] | undefined;
  /** Over the counts: the values `timestamp` is compared with, each to be a whole UTC hour. */
  private hourBounds: SQL[] = [];

  private spend(n: number, at?: number): void {
    this.cost += n;
    if (this.cost > MAX_COST)
      throw new QueryError('Query is too complex: simplify it or use fewer aliases of aliases', at);
  }
  constructor(private opts: CompileOptions) {}

  /** One expression over one table, outside any SELECT of ours. */
  expression(node: Node, binding: Binding): Typed {
    const scope: Scope = {
      bindings: [binding],
      aliases: new Map(),
      expanding: new Set(),
      ctes: new Map(),
      windows: {},
      locals: new Map(),
    };
    return this.expr(node, scope);
  }

  top(q: Query): Omit<CompiledQuery, 'timezone'> {
    if (isSet(q)) return this.topSet(q);
    // The answer's own row limit and its "more rows" test apply to the outermost query.
    if (q.withTies) throw new QueryError('LIMIT ... WITH TIES is supported in subqueries and CTEs only', q.limit?.pos);
    const max = this.opts.maxLimit ?? 10_000;
    const requested = q.limit ? this.count(q.limit, 'LIMIT') : undefined;
    const limit = Math.min(requested ?? this.opts.defaultLimit ?? 100, max);
    const offset = q.offset ? this.count(q.offset, 'OFFSET') : 0;
    const effective: Select = { ...q, limit: { k: 'const', value: limit, pos: 0 } };
    this.withs = [];
    const inner = this.select({ ...q, limit: { k: 'const', value: limit + 1, pos: 0 } });
    const fromCounts = this.overCounts(q, limit);
    if (fromCounts) inner.sql = fromCounts(inner.sql);
    const values = inner.out.map((o, i) =>
      outputSql(this.inZone({ ...o.typed, sql: sql`q.${sql.identifier(`c${i}`)}` })),
    );
    return {
      sql: sql`${this.withClause()}select json_build_array(${sql.join(values, sql`, `)}) as r from (${inner.sql}) as q`,
      columns: inner.out.map((o) => o.name),
      types: inner.out.map((o) => clickhouseType(this.inZone(o.typed))),
      hogql: printSelect(effective),
      limit,
      offset,
    };
  }

  /**
   * The query over the events' hourly counts, when they answer it exactly: the statement reads them when every
   * value `timestamp` is compared with is a whole UTC hour, else the events (one branch runs, by a one-time
   * filter). Undefined when the counts cannot answer it.
   */
  private overCounts(q: Select, limit: number): ((events: SQL) => SQL) | undefined {
    if (this.opts.counts) return undefined;
    if (!isWholeHourZone(this.opts.timezone ?? 'UTC') || !answerableFromCounts(q)) return undefined;
    const counts = new Compiler({ ...this.opts, counts: true });
    const over = counts.select({ ...q, limit: { k: 'const', value: limit + 1, pos: 0 } });
    if (!counts.hourBounds.length) return () => over.sql;
    const whole = sql.join(
      counts.hourBounds.map((x) => sql`date_bin('1 hour', ${x}, timestamptz '1970-01-01 00:00:00+00') = ${x}`),
      sql` and `,
    );
    return (events) => sql`select * from (${over.sql}) as from_counts where coalesce(${whole}, false)
      union all select * from (${events}) as from_events where not coalesce(${whole}, false)`;
  }

  private withClause(): SQL {
    return this.withs?.length ? sql`with ${sql.join(this.withs, sql`, `)} ` : sql``;
  }

  private inZone(t: Typed): Typed {
    return inZone(t, this.opts.timezone);
  }

  /** Where text and dates meeting these values become date-times: see readZone. */
  private zoneOf(...xs: Typed[]): string | undefined {
    return readZone(xs, this.opts.timezone);
  }

  /** A UNION (or INTERSECT, EXCEPT): the answer's row limit applies to the whole. */
  private topSet(q: Query): Omit<CompiledQuery, 'timezone'> {
    const limit = Math.min(this.opts.defaultLimit ?? 100, this.opts.maxLimit ?? 10_000);
    this.withs = [];
    const inner = this.query(q, new Map());
    const values = inner.out.map((o, i) =>
      outputSql(this.inZone({ ...o.typed, sql: sql`q.${sql.identifier(`c${i}`)}` })),
    );
    return {
      sql: sql`${this.withClause()}select json_build_array(${sql.join(values, sql`, `)}) as r from (${inner.sql}) as q
        limit ${limit + 1}::bigint`,
      columns: inner.out.map((o) => o.name),
      types: inner.out.map((o) => clickhouseType(this.inZone(o.typed))),
      hogql: `${printQuery(q)} LIMIT ${limit}`,
      limit,
      offset: 0,
    };
  }

  /** A SELECT or a set of them; the columns of a set take the first query's names and a type all share. */
  query(q: Query, ctes: Map<string, CteDef>): { sql: SQL; out: Out[] } {
    if (!isSet(q)) return this.select(q, ctes);
    const parts = q.queries.map((x) => this.query(x, ctes));
    const width = parts[0]!.out.length;
    for (const p of parts)
      if (p.out.length !== width)
        throw new QueryError(`The queries of a ${q.ops[0]} must select the same number of columns`);
    const types = parts[0]!.out.map((_, i) =>
      common(
        parts.map((p) => p.out[i]!.typed.type),
        0,
      ),
    );
    const branches = parts.map((p) => {
      if (p.out.every((o, i) => o.typed.type === types[i] || types[i] === 'Null')) return sql`(${p.sql})`;
      const alias = sql.identifier(`t${this.aliasCount++}`);
      const cols = p.out.map((o, i) => {
        const c = { ...o.typed, sql: sql`${alias}.${sql.identifier(`c${i}`)}` };
        const zone = this.zoneOf(...parts.map((x) => x.out[i]!.typed));
        return sql`${coerce(c, types[i]!, undefined, zone).sql} as ${sql.identifier(`c${i}`)}`;
      });
      return sql`(select ${sql.join(cols, sql`, `)} from (${p.sql}) as ${alias})`;
    });
    let body = branches[0]!;
    q.ops.forEach((op, i) => {
      const word = op === 'UNION DISTINCT' ? 'union' : op.toLowerCase();
      body = sql`${body} ${sql.raw(word)} ${branches[i + 1]!}`;
    });
    const out = parts[0]!.out.map((o, i) => ({
      name: o.name,
      typed: {
        sql: o.typed.sql,
        type: types[i] === 'Null' ? o.typed.type : types[i]!,
        ch: o.typed.ch,
        elem: o.typed.elem,
      },
    }));
    return { sql: body, out };
  }

  /** A LIMIT or OFFSET: a constant whole number (or a placeholder holding one). */
  private count(node: Node, what: string): number {
    const v = node.k === 'placeholder' ? this.placeholder(node) : node.k === 'const' ? node.value : undefined;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw new QueryError(`${what} must be a whole number of rows`, node.pos);
    return v;
  }

  private placeholder(node: Extract<Node, { k: 'placeholder' }>): unknown {
    const values = this.opts.values ?? {};
    if (!Object.hasOwn(values, node.name)) {
      const known = Object.keys(values);
      throw new QueryError(
        `Placeholder {${node.name}} is not available in this context. You can use the following: ` +
          `${known.length ? known.join(', ') : 'none'}`,
        node.pos,
      );
    }
    return values[node.name];
  }

  private scalar(v: unknown, at: number): Typed {
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return constant(v, at);
    throw new QueryError(
      'Placeholder values must be strings, numbers, booleans or null (or a list of them after IN)',
      at,
    );
  }

  select(q: Select, outerCtes: Map<string, CteDef> = new Map()): { sql: SQL; out: Out[] } {
    const scope: Scope = {
      bindings: [],
      aliases: new Map(),
      expanding: new Set(),
      ctes: this.ctes(q.ctes ?? [], outerCtes),
      windows: q.windows ?? {},
      locals: new Map(),
    };
    for (const c of q.ctes ?? []) if ('expr' in c) scope.aliases.set(c.name, c.expr);
    let from = sql``;
    if (q.from) {
      from = sql` from ${this.source(q.from, scope)}`;
      for (const j of q.joins) {
        const src = this.source(j.item, scope);
        const on = j.on ? sql` on ${toBool(this.expr(j.on, scope), j.on.pos).sql}` : sql``;
        from = sql`${from} ${sql.raw(JOIN[j.type]!)} ${src}${on}`;
      }
    }
    for (const c of q.columns) {
      if (!c.alias) continue;
      if (scope.aliases.has(c.alias) && !(q.ctes ?? []).some((x) => x.name === c.alias))
        throw new QueryError(`Cannot redefine an alias with the name: ${c.alias}`, c.expr.pos);
      scope.aliases.set(c.alias, c.expr);
    }
    const out: Out[] = [];
    /** Where each column of the query lands among the result's (a `*` spreads into several). */
    const positions: number[] = [];
    for (const c of q.columns) {
      if (c.expr.k === 'star') out.push(...this.star(c.expr, scope));
      else {
        const typed = this.column(c.expr, scope);
        out.push({ name: c.alias ?? columnName(c.expr, typed), typed });
      }
      positions.push(out.length);
    }
    if (out.length > MAX_COLUMNS) throw new QueryError(`A query may return at most ${MAX_COLUMNS} columns`);
    const parts: SQL[] = [
      sql`select ${q.distinct ? sql`distinct ` : sql``}${sql.join(
        out.map((o, i) => sql`${o.typed.sql} as ${sql.identifier(`c${i}`)}`),
        sql`, `,
      )}${from}`,
    ];
    if (q.where) parts.push(sql`where ${toBool(this.expr(q.where, scope), q.where.pos).sql}`);
    if (q.groupBy.length)
      parts.push(
        sql`group by ${sql.join(
          q.groupBy.map((g) => this.positional(g, q, positions) ?? this.expr(g, scope).sql),
          sql`, `,
        )}`,
      );
    const having = q.having ? [toBool(this.expr(q.having, scope), q.having.pos).sql] : [];
    // Over the counts, a group whose events were all deleted can still have rows (adding up to 0): no group.
    if (this.opts.counts && q.groupBy.length)
      having.push(sql`sum(${sql.identifier(scope.bindings[0]!.sqlAlias)}.n) <> 0`);
    if (having.length) parts.push(sql`having ${sql.join(having, sql` and `)}`);
    if (q.orderBy.length) {
      const order = q.orderBy.map((o) => {
        const key = this.positional(o.expr, q, positions) ?? this.orderable(this.expr(o.expr, scope));
        return sql`${key} ${sql.raw(o.desc ? 'desc nulls last' : 'asc')}`;
      });
      parts.push(sql`order by ${sql.join(order, sql`, `)}`);
    }
    if (q.limit && q.withTies) {
      if (!q.orderBy.length) throw new QueryError('LIMIT ... WITH TIES needs an ORDER BY', q.limit.pos);
      if (q.offset) parts.push(sql`offset ${this.count(q.offset, 'OFFSET')}::bigint rows`);
      parts.push(sql`fetch first (${this.count(q.limit, 'LIMIT')}::bigint) rows with ties`);
    } else {
      if (q.limit) parts.push(sql`limit ${this.count(q.limit, 'LIMIT')}::bigint`);
      if (q.offset) parts.push(sql`offset ${this.count(q.offset, 'OFFSET')}::bigint`);
    }
    return { sql: sql.join(parts, sql` `), out };
  }

  /** The CTEs a SELECT sees: its own (each seeing those before it, so none is recursive) over its parents'. */
  private ctes(own: Cte[], outer: Map<string, CteDef>): Map<string, CteDef> {
    const visible = new Map(outer);
    for (const c of own) {
      if (!('query' in c)) continue;
      visible.set(c.name, { query: c.query, ctes: new Map(visible) });
    }
    return visible;
  }

  /**
   * A column of SELECT. `arrayJoin(arr)` makes a row per element, as in ClickHouse: PostgreSQL's unnest() in the
   * select list does that, and is allowed nowhere else.
   */
  private column(node: Node, scope: Scope): Typed {
    const aliased = node.k === 'field' && node.chain.length === 1 ? scope.aliases.get(node.chain[0]!) : undefined;
    const target = aliased ?? node;
    if (target.k === 'call' && target.name.toLowerCase() === 'arrayjoin' && !target.over) {
      if (target.args.length !== 1) throw new QueryError('arrayJoin() takes one array', target.pos);
      const arr = this.expr(target.args[0]!, scope);
      if (arr.type !== 'Array') throw new QueryError('arrayJoin() takes an array', target.pos);
      return { sql: sql`unnest(${arr.sql})`, type: arr.elem ?? 'String' };
    }
    return this.expr(node, scope);
  }

  private orderable(t: Typed): SQL {
    if (t.type === 'Json') throw new QueryError('Cannot order by a whole event or person');
    return t.sql;
  }

  /**
   * A result column that GROUP BY or ORDER BY names, as its position: by number (`GROUP BY 1`), by
   * alias, or by the same expression. Compiled twice, an expression would get fresh parameters for
   * its constants and property keys, and PostgreSQL would not see that the two are the same.
   */
  private positional(node: Node, q: Select, positions: number[]): SQL | undefined {
    if (node.k === 'const' && typeof node.value === 'number') {
      const last = positions.length ? positions[positions.length - 1]! : 0;
      if (!Number.isInteger(node.value) || node.value < 1 || node.value > last)
        throw new QueryError(`Column position ${node.value} is out of range`, node.pos);
      return sql.raw(String(node.value));
    }
    const text = print(node);
    const i = q.columns.findIndex(
      (c) =>
        c.expr.k !== 'star' &&
        ((node.k === 'field' && node.chain.length === 1 && c.alias === node.chain[0]) || print(c.expr) === text),
    );
    return i >= 0 ? sql.raw(String(positions[i]!)) : undefined;
  }

  private source(item: FromItem, scope: Scope): SQL {
    if (++this.tables > MAX_TABLES) throw new QueryError(`A query may read at most ${MAX_TABLES} tables`, item.pos);
    const sqlAlias = `t${this.aliasCount++}`;
    let src: SQL;
    let binding: Binding;
    const cte = item.k === 'table' ? scope.ctes.get(item.name) : undefined;
    if (cte) {
      binding = { name: item.alias ?? (item as { name: string }).name, sqlAlias, table: null };
      if (this.withs) {
        if (!cte.compiled) {
          const sub = this.query(cte.query, cte.ctes);
          const name = `w${this.withs.length}`;
          this.withs.push(sql`${sql.identifier(name)} as (${sub.sql})`);
          cte.compiled = { name, out: sub.out };
        }
        binding.columns = this.columnsOf(cte.compiled.out);
        src = sql`${sql.identifier(cte.compiled.name)}`;
      } else {
        const sub = this.query(cte.query, cte.ctes);
        binding.columns = this.columnsOf(sub.out);
        src = sql`(${sub.sql})`;
      }
    } else if (item.k === 'table') {
      if (!(TABLES as readonly string[]).includes(item.name)) {
        throw new QueryError(`Unknown table "${item.name}". Tables: ${TABLES.join(', ')}`, item.pos);
      }
      const table = item.name as TableName;
      const source =
        this.opts.counts && table === 'events' ? countsSource(this.opts.teamId) : tableSource(table, this.opts.teamId);
      binding = { name: item.alias ?? item.name, sqlAlias, table, usePerson: source.usePerson };
      src = source.sql;
    } else {
      const sub = this.query(item.query, scope.ctes);
      binding = { name: item.alias, sqlAlias, table: null, columns: this.columnsOf(sub.out) };
      src = sql`(${sub.sql})`;
    }
    if (binding.name !== null && scope.bindings.some((b) => b.name === binding.name)) {
      throw new QueryError(`Table alias "${binding.name}" is used twice`, item.pos);
    }
    scope.bindings.push(binding);
    return sql`${src} as ${sql.identifier(sqlAlias)}`;
  }

  private columnsOf(out: Out[]): NonNullable<Binding['columns']> {
    const columns: NonNullable<Binding['columns']> = new Map();
    out.forEach((o, i) => {
      if (!columns.has(o.name))
        columns.set(o.name, { sqlName: `c${i}`, type: o.typed.type, ch: o.typed.ch, elem: o.typed.elem });
    });
    return columns;
  }

  private star(node: Extract<Node, { k: 'star' }>, scope: Scope): Out[] {
    const bindings = node.table ? scope.bindings.filter((b) => b.name === node.table) : scope.bindings;
    if (!bindings.length)
      throw new QueryError(node.table ? `Unknown table "${node.table}"` : 'SELECT * needs a FROM', node.pos);
    return bindings.flatMap((b) =>
      (b.columns ? [...b.columns.keys()] : STAR[b.table!]).map((name) => ({
        name,
        typed: tableField(b, [name], this.opts.teamId)!,
      })),
    );
  }

  private field(node: Extract<Node, { k: 'field' }>, scope: Scope): Typed {
    const { chain } = node;
    const head = chain[0]!;
    const local = chain.length === 1 ? scope.locals.get(head) : undefined;
    if (local) return local;
    if (chain.length === 1 && scope.aliases.has(head) && !scope.expanding.has(head)) {
      scope.expanding.add(head);
      try {
        return this.expr(scope.aliases.get(head)!, scope);
      } finally {
        scope.expanding.delete(head);
      }
    }
    const named = chain.length > 1 ? scope.bindings.find((b) => b.name === head) : undefined;
    if (named) {
      const f = tableField(named, chain.slice(1), this.opts.teamId);
      if (f) return f;
    }
    const found = scope.bindings
      .map((b) => tableField(b, chain, this.opts.teamId))
      .filter((f): f is Typed => f !== undefined);
    if (found.length === 1) return found[0]!;
    const name = chain.join('.');
    if (found.length > 1) throw new QueryError(`Ambiguous field: ${name}. Prefix it with a table's alias`, node.pos);
    const tables = scope.bindings.map((b) => b.table).filter((t): t is TableName => t !== null);
    const hint = tables.length === 1 ? ` (${tables[0]} has: ${FIELDS[tables[0]!].join(', ')}, properties.<key>)` : '';
    throw new QueryError(`Unable to resolve field: ${name}${hint}`, node.pos);
  }

  expr(node: Node, scope: Scope): Typed {
    this.spend(node.k === 'field' ? node.chain.length : 1, node.pos);
    switch (node.k) {
      case 'const':
        return constant(node.value, node.pos);
      case 'placeholder': {
        const v = this.placeholder(node);
        // A list outside IN is an array, as ClickHouse's Array parameters.
        if (Array.isArray(v))
          return arrayOf(
            v.map((x) => this.scalar(x, node.pos)),
            node.pos,
            this.zoneOf(),
          );
        return this.scalar(v, node.pos);
      }
      case 'field':
        return this.field(node, scope);
      case 'call':
        return this.call(node, scope);
      case 'array': {
        const items = node.items.map((i) => this.expr(i, scope));
        return arrayOf(items, node.pos, this.zoneOf(...items));
      }
      case 'lambda':
        throw new QueryError(
          'A lambda (x -> ...) is only allowed as the first argument of arrayMap, arrayFilter, arrayExists or arrayAll',
          node.pos,
        );
      case 'index': {
        const arr = this.expr(node.arr, scope);
        if (arr.type !== 'Array') throw new QueryError('Only arrays can be indexed with [...]', node.pos);
        const i = toNumber(this.expr(node.index, scope), node.pos).sql;
        // ClickHouse counts from 1, and from the end for negative indexes.
        return {
          sql: sql`(${arr.sql})[(case when (${i}) < 0 then cardinality(${arr.sql}) + 1 + (${i}) else (${i}) end)::int]`,
          type: arr.elem ?? 'String',
        };
      }
      case 'subquery': {
        const sub = this.query(node.query, scope.ctes);
        if (sub.out.length !== 1) throw new QueryError('A subquery used as a value must select one column', node.pos);
        const alias = sql.identifier(`t${this.aliasCount++}`);
        const col = sub.out[0]!.typed;
        return { ...col, sql: sql`(select ${alias}.c0 from (${sub.sql}) as ${alias} limit 1)`, constant: undefined };
      }
      case 'binop':
        return this.binop(node, scope);
      case 'and':
      case 'or':
        return {
          sql: sql`(${sql.join(
            node.args.map((a) => toBool(this.expr(a, scope), a.pos).sql),
            sql.raw(node.k === 'and' ? ' and ' : ' or '),
          )})`,
          type: 'Bool',
        };
      case 'not':
        return { sql: sql`(not ${toBool(this.expr(node.arg, scope), node.pos).sql})`, type: 'Bool' };
      case 'neg': {
        const x = this.expr(node.arg, scope);
        const n = x.type === 'Interval' ? x : toNumber(x, node.pos);
        return { sql: sql`(- ${n.sql})`, type: n.type };
      }
      case 'isnull':
        return {
          sql: sql`(${this.expr(node.arg, scope).sql} ${sql.raw(node.negated ? 'is not null' : 'is null')})`,
          type: 'Bool',
        };
      case 'between': {
        const xs = [node.arg, node.low, node.high].map((n) => this.expr(n, scope));
        const t = common(
          xs.map((x) => x.type),
          node.pos,
        );
        const zone = this.zoneOf(...xs);
        const [a, lo, hi] = xs.map((x) => coerce(x, t, node.pos, zone).sql);
        return { sql: sql`(${a} ${sql.raw(node.negated ? 'not between' : 'between')} ${lo} and ${hi})`, type: 'Bool' };
      }
      case 'in':
        return this.in(node, scope);
      case 'interval':
        return interval(this.expr(node.value, scope), node.unit, node.pos);
      case 'case': {
        const values = [...node.branches.map(([, v]) => v), ...(node.otherwise ? [node.otherwise] : [])].map((v) =>
          this.expr(v, scope),
        );
        const t = common(
          values.map((v) => v.type),
          node.pos,
        );
        const zone = this.zoneOf(...values);
        const vs = values.map((v) => (t === 'Null' ? v : coerce(v, t, node.pos, zone)));
        const whens = node.branches.map(
          ([c], i) => sql`when ${toBool(this.expr(c, scope), c.pos).sql} then ${vs[i]!.sql}`,
        );
        const otherwise = node.otherwise ? sql` else ${vs[vs.length - 1]!.sql}` : sql``;
        return { sql: sql`(case ${sql.join(whens, sql` `)}${otherwise} end)`, type: t };
      }
      case 'star':
        throw new QueryError('* is only allowed on its own in SELECT and in count(*)', node.pos);
      case 'object': {
        const events = scope.bindings.find((b) => b.table === 'events');
        if (!events) throw new QueryError('Only an events query can select the whole event or person', node.pos);
        return objectOf(events, node.of, this.opts.teamId);
      }
    }
  }

  private call(node: Extract<Node, { k: 'call' }>, scope: Scope): Typed {
    const name = node.name.toLowerCase();
    if (HIGHER_ORDER.has(name)) return this.higherOrder(node, scope);
    if (name === 'arrayjoin')
      throw new QueryError('arrayJoin() is supported as a whole column of SELECT only', node.pos);
    if (!node.over) {
      if (WINDOW_ONLY.has(name)) throw new QueryError(`${node.name}() needs an OVER (...) clause`, node.pos);
      if (this.opts.counts && name === 'count') {
        const n = sql`${sql.identifier(scope.bindings[0]!.sqlAlias)}.n`;
        return { sql: sql`coalesce(sum(${n}), 0)::bigint`, type: 'Int', ch: 'UInt64' };
      }
      const key = this.distinctPersons(node, scope);
      if (key) return { sql: sql`count(distinct ${key})`, type: 'Int', ch: 'UInt64' };
      return callFunction(
        node,
        node.args.map((a) => this.expr(a, scope)),
        this.opts.timezone,
        this.opts.sessionTimezone,
      );
    }
    if (!WINDOW_ONLY.has(name) && !WINDOW_AGGREGATES.has(name))
      throw new QueryError(`${node.name}() cannot be used as a window function`, node.pos);
    if (node.distinct) throw new QueryError(`${node.name}(DISTINCT ...) cannot be used over a window`, node.pos);
    const fn = callFunction(
      node,
      node.args.map((a) => this.expr(a, scope)),
      this.opts.timezone,
      this.opts.sessionTimezone,
    );
    let spec: WindowSpec;
    if ('name' in node.over) {
      const named = scope.windows[node.over.name];
      if (!named) throw new QueryError(`Window "${node.over.name}" is not defined in WINDOW`, node.pos);
      spec = named;
    } else spec = node.over;
    return { ...fn, sql: sql`${fn.sql} over (${this.window(spec, scope)})` };
  }

  /** `uniq(person_id)` or `count(DISTINCT person_id)` of one events table: counted by its key (see personKey). */
  private distinctPersons(node: Extract<Node, { k: 'call' }>, scope: Scope): SQL | undefined {
    const name = node.name.toLowerCase();
    const counts = name === 'uniq' || name === 'uniqexact' || (name === 'count' && node.distinct);
    const [arg, ...more] = node.args;
    if (!counts || node.params || more.length || arg?.k !== 'field') return undefined;
    const { chain } = arg;
    if (chain.length === 1 && (scope.locals.has(chain[0]!) || scope.aliases.has(chain[0]!))) return undefined;
    const named = chain.length > 1 ? scope.bindings.find((b) => b.name === chain[0]) : undefined;
    if (named) return personKey(named, chain.slice(1));
    // Only when no other table in scope has the field, else the usual resolution reports it ambiguous.
    const [only, ...others] = scope.bindings.filter(
      (b) => (b.table === 'events' ? !b.columns : b.columns?.has(chain[0]!)) || b.table === 'person_distinct_ids',
    );
    return only && !others.length ? personKey(only, chain) : undefined;
  }

  private window(w: WindowSpec, scope: Scope): SQL {
    const parts: SQL[] = [];
    if (w.partitionBy.length)
      parts.push(
        sql`partition by ${sql.join(
          w.partitionBy.map((p) => this.orderable(this.expr(p, scope))),
          sql`, `,
        )}`,
      );
    const keys = w.orderBy.map((o) => ({ typed: this.expr(o.expr, scope), desc: o.desc }));
    if (keys.length) {
      const order = keys.map((k) => sql`${this.orderable(k.typed)} ${sql.raw(k.desc ? 'desc nulls last' : 'asc')}`);
      parts.push(sql`order by ${sql.join(order, sql`, `)}`);
    }
    if (w.frame) {
      const { method, start, end } = w.frame;
      // A RANGE offset is in the units of the one ORDER BY key, as in ClickHouse: microseconds of a date-time
      // (events' timestamps are DateTime64(6)), days of a date. Frame bounds are whole numbers checked by the
      // parser's converter, so they are written as text.
      const key = keys.length === 1 ? keys[0]!.typed.type : undefined;
      const offset = (v: number) =>
        method === 'RANGE' && key === 'DateTime'
          ? `interval '${v} microseconds'`
          : method === 'RANGE' && key === 'Date'
            ? `interval '${v} days'`
            : String(v);
      const bound = (b: { type: string; value: number | null }) =>
        b.type === 'CURRENT ROW'
          ? 'current row'
          : `${b.value === null ? 'unbounded' : offset(b.value)} ${b.type.toLowerCase()}`;
      parts.push(
        sql.raw(
          end
            ? `${method.toLowerCase()} between ${bound(start)} and ${bound(end)}`
            : `${method.toLowerCase()} ${bound(start)}`,
        ),
      );
    }
    return sql.join(parts, sql` `);
  }

  /**
   * arrayMap, arrayFilter, arrayExists, arrayAll: the lambda's body runs once per element, over the arrays'
   * elements side by side (unnest of several arrays), in their order.
   */
  private higherOrder(node: Extract<Node, { k: 'call' }>, scope: Scope): Typed {
    const [lambda, ...rest] = node.args;
    if (lambda?.k !== 'lambda' || !rest.length)
      throw new QueryError(`${node.name}() takes a lambda (x -> ...) and then one or more arrays`, node.pos);
    if (lambda.params.length !== rest.length)
      throw new QueryError(
        `The lambda of ${node.name}() takes ${lambda.params.length} arguments for ${rest.length} arrays`,
        node.pos,
      );
    const arrays = rest.map((a) => {
      const t = this.expr(a, scope);
      if (t.type !== 'Array') throw new QueryError(`${node.name}() takes arrays after its lambda`, a.pos);
      return t;
    });
    const alias = `l${this.aliasCount++}`;
    const u = sql.identifier(alias);
    const locals = new Map(scope.locals);
    for (const [i, p] of lambda.params.entries())
      locals.set(p, { sql: sql`${u}.${sql.identifier(`v${i}`)}`, type: arrays[i]!.elem ?? 'String' });
    const inner: Scope = { ...scope, locals };
    const body = this.expr(lambda.body, inner);
    const names = sql.raw([...lambda.params.map((_, i) => `v${i}`), 'i'].join(', '));
    const from = sql`unnest(${sql.join(
      arrays.map((a) => a.sql),
      sql`, `,
    )}) with ordinality as ${u}(${names})`;
    const name = node.name.toLowerCase();
    if (name === 'arrayexists' || name === 'arrayall') {
      const cond = toBool(body, lambda.pos).sql;
      return name === 'arrayexists'
        ? { sql: sql`exists (select 1 from ${from} where ${cond})`, type: 'Bool' }
        : { sql: sql`not exists (select 1 from ${from} where not coalesce(${cond}, false))`, type: 'Bool' };
    }
    if (name === 'arrayfilter') {
      const first = arrays[0]!;
      const elem = first.elem ?? 'String';
      return {
        sql: sql`coalesce((select array_agg(${u}.v0 order by ${u}.i) from ${from}
          where ${toBool(body, lambda.pos).sql}), array[]::${sql.raw(pgType(elem, node.pos))}[])`,
        type: 'Array',
        elem,
      };
    }
    const elem = body.type === 'Prop' ? 'String' : body.type;
    const value = body.type === 'Prop' ? toText(body) : body;
    return {
      sql: sql`coalesce((select array_agg(${value.sql} order by ${u}.i) from ${from}),
        array[]::${sql.raw(pgType(elem, node.pos))}[])`,
      type: 'Array',
      elem,
    };
  }

  private binop(node: Extract<Node, { k: 'binop' }>, scope: Scope): Typed {
    const l = this.expr(node.left, scope);
    const r = this.expr(node.right, scope);
    const at = node.pos;
    const cmp = COMPARE[node.op];
    if (cmp) {
      const t = common([l.type, r.type], at);
      const zone = this.zoneOf(l, r);
      const [a, b] = t === 'Null' ? [l, r] : [coerce(l, t, at, zone), coerce(r, t, at, zone)];
      if (this.opts.counts) {
        const isTime = (n: Node) => n.k === 'field' && n.chain.at(-1) === 'timestamp';
        if (isTime(node.left)) this.hourBounds.push(sql`(${b.sql})::timestamptz`);
        if (isTime(node.right)) this.hourBounds.push(sql`(${a.sql})::timestamptz`);
      }
      return { sql: sql`(${a.sql} ${sql.raw(cmp)} ${b.sql})`, type: 'Bool' };
    }
    const regex = REGEX[node.op];
    if (regex) return { sql: sql`(${toText(l).sql} ${sql.raw(regex)} ${toText(r).sql})`, type: 'Bool' };
    const like = LIKE[node.op];
    if (like) return { sql: sql`(${toText(l).sql} ${sql.raw(like)} ${toText(r).sql})`, type: 'Bool' };
    if (node.op === '||') return { sql: sql`(${toText(l).sql} || ${toText(r).sql})`, type: 'String' };
    if (node.op === '+' || node.op === '-') {
      const temporal = (x: Typed) => x.type === 'DateTime' || x.type === 'Date';
      if (l.type === 'Interval' && r.type === 'Interval')
        return { sql: sql`(${l.sql} ${sql.raw(node.op)} ${r.sql})`, type: 'Interval' };
      if (r.type === 'Interval' && l.type !== 'Null')
        return { sql: sql`(${toDateTime(l, at, this.zoneOf()).sql} ${sql.raw(node.op)} ${r.sql})`, type: 'DateTime' };
      if (l.type === 'Interval' && node.op === '+')
        return { sql: sql`(${toDateTime(r, at, this.zoneOf()).sql} + ${l.sql})`, type: 'DateTime' };
      if (l.type === 'Date' && !temporal(r))
        return { sql: sql`(${l.sql} ${sql.raw(node.op)} (${toNumber(r, at).sql})::int)`, type: 'Date' };
      if (temporal(l) || temporal(r))
        throw new QueryError(`Cannot ${node.op === '+' ? 'add' : 'subtract'} these: use an INTERVAL`, at);
    }
    const a = toNumber(l, at);
    const b = toNumber(r, at);
    const ints = a.type === 'Int' && b.type === 'Int';
    switch (node.op) {
      case '+':
      case '-':
      case '*':
        return { sql: sql`(${a.sql} ${sql.raw(node.op)} ${b.sql})`, type: ints ? 'Int' : 'Float' };
      case '/':
        return { sql: sql`((${a.sql})::numeric / nullif((${b.sql})::numeric, 0))`, type: 'Float' };
      case '%':
        return { sql: sql`mod((${a.sql})::numeric, nullif((${b.sql})::numeric, 0))`, type: ints ? 'Int' : 'Float' };
    }
    throw new QueryError(`Unsupported operator ${node.op}`, at);
  }

  private in(node: Extract<Node, { k: 'in' }>, scope: Scope): Typed {
    const left = this.expr(node.left, scope);
    const not = sql.raw(node.negated ? 'not in' : 'in');
    if (node.sub) {
      const sub = this.query(node.sub, scope.ctes);
      if (sub.out.length !== 1) throw new QueryError('A subquery after IN must select one column', node.pos);
      const col = sub.out[0]!.typed;
      const t = common([left.type, col.type], node.pos);
      const alias = sql.identifier(`t${this.aliasCount++}`);
      const zone = this.zoneOf(left, col);
      const inner = coerce({ ...col, sql: sql`${alias}.c0` }, t, node.pos, zone);
      return {
        sql: sql`(${coerce(left, t, node.pos, zone).sql} ${not} (select ${inner.sql} from (${sub.sql}) as ${alias}))`,
        type: 'Bool',
      };
    }
    const items: Typed[] = [];
    for (const n of node.list!) {
      const v = n.k === 'placeholder' ? this.placeholder(n) : undefined;
      if (Array.isArray(v)) {
        if (v.length > MAX_LIST) throw new QueryError(`A list may hold at most ${MAX_LIST} values`, n.pos);
        this.spend(v.length, n.pos);
        items.push(...v.map((x) => this.scalar(x, n.pos)));
      } else items.push(this.expr(n, scope));
    }
    if (!items.length) return { sql: sql.raw(node.negated ? 'true' : 'false'), type: 'Bool' };
    const t = common([left.type, ...items.map((i) => i.type)], node.pos);
    const to = t === 'Null' ? 'String' : t;
    const zone = this.zoneOf(left, ...items);
    const list = sql.join(
      items.map((i) => coerce(i, to, node.pos, zone).sql),
      sql`, `,
    );
    return { sql: sql`(${coerce(left, to, node.pos, zone).sql} ${not} (${list}))`, type: 'Bool' };
  }
}

/**
 * As PostHog names an unaliased column: a table's field by its own name (`e.event` is `event`), anything else as
 * printed.
 */
function columnName(expr: Node, typed: Typed): string {
  return expr.k === 'field' && typed.type !== 'Prop' ? expr.chain[expr.chain.length - 1]! : print(expr);
}

/**
 * One expression (the events listing's `select` and `where`, an export's fields) over a table the caller's SQL
 * reads under `binding`; the caller scopes that table to the project.
 */
export function compileExpression(node: Node, binding: Binding, opts: CompileOptions): Typed {
  return new Compiler(opts).expression(node, binding);
}

/** A parsed query as parameterised SQL over the project's rows only. */
export function compileQuery(q: Query, opts: CompileOptions): CompiledQuery {
  const timezone = opts.timezone ?? 'UTC';
  return { ...new Compiler({ ...opts, sessionTimezone: timezone }).top(q), timezone };
}
