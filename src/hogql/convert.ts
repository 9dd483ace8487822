// PostHog's parser (@posthog/hogql-parser) answers with PostHog's AST as JSON; this turns it into the
// compiler's AST. A construct the compiler does not handle is refused here, by name, with its position.
import type { Column, Cte, FrameBound, FromItem, Join, Node, Query, Select, WindowSpec } from './ast.js';
import { QueryError } from './errors.js';

/** The parametric aggregates the compiler knows (`quantile(0.9)(x)`); any other is refused as PostHog's would be. */
const PARAMETRIC = new Set(['quantile']);

/** PostHog's AST node, as JSON: `node` names its class, `start.offset` where it begins. */
// biome-ignore lint/suspicious/noExplicitAny: the parser's JSON is checked node by node below
type PH = any;

/** Deep nesting would exhaust the stack of PostgreSQL's planner; no real query nests this far. */
const MAX_DEPTH = 64;

const COMPARE: Record<string, string> = {
  '==': '=',
  '!=': '!=',
  '<': '<',
  '<=': '<=',
  '>': '>',
  '>=': '>=',
  like: 'LIKE',
  ilike: 'ILIKE',
  'not like': 'NOT LIKE',
  'not ilike': 'NOT ILIKE',
  '=~': '=~',
  '!~': '!~',
  '=~*': '=~*',
  '!~*': '!~*',
};
const JOINS: Record<string, Join['type']> = {
  JOIN: 'INNER',
  'INNER JOIN': 'INNER',
  'LEFT JOIN': 'LEFT',
  'LEFT OUTER JOIN': 'LEFT',
  'RIGHT JOIN': 'RIGHT',
  'RIGHT OUTER JOIN': 'RIGHT',
  'FULL JOIN': 'FULL',
  'FULL OUTER JOIN': 'FULL',
  'CROSS JOIN': 'CROSS',
  ',': 'CROSS',
};
const SET_OPS = new Set(['UNION ALL', 'UNION DISTINCT', 'INTERSECT', 'EXCEPT']);

const posOf = (n: PH): number => (typeof n?.start?.offset === 'number' ? n.start.offset : 0);

class Converter {
  private depth = 0;

  private nest<T>(n: PH, f: () => T): T {
    if (++this.depth > MAX_DEPTH)
      throw new QueryError(`Query is nested too deeply (at most ${MAX_DEPTH} levels)`, posOf(n));
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  private unsupported(what: string, n: PH, plural = /s$/.test(what)): never {
    throw new QueryError(`${what} ${plural ? 'are' : 'is'} not supported`, posOf(n));
  }

  query(n: PH): Query {
    return this.nest(n, () => {
      if (n?.node === 'SelectQuery') return this.select(n);
      if (n?.node === 'SelectSetQuery') {
        const queries: Query[] = [this.query(n.initial_select_query)];
        const ops: ('UNION ALL' | 'UNION DISTINCT' | 'INTERSECT' | 'EXCEPT')[] = [];
        for (const next of n.subsequent_select_queries ?? []) {
          const op = String(next.set_operator);
          if (!SET_OPS.has(op)) this.unsupported(op, n);
          ops.push(op as (typeof ops)[number]);
          queries.push(this.query(next.select_query));
        }
        return { k: 'set', queries, ops };
      }
      return this.unsupported(`${n?.node ?? 'This statement'} as a query`, n);
    });
  }

  select(n: PH): Select {
    if (n.prewhere) this.unsupported('PREWHERE', n.prewhere);
    if (n.qualify) this.unsupported('QUALIFY', n.qualify);
    if (n.limit_by) this.unsupported('LIMIT BY', n.limit_by);
    if (n.array_join_op || n.array_join_list) this.unsupported('ARRAY JOIN (use arrayJoin())', n);
    if (n.settings) this.unsupported('SETTINGS', n);
    if (n.view_name) this.unsupported('Views', n);
    const ctes: Cte[] = [];
    for (const c of Array.isArray(n.ctes) ? n.ctes : Object.values(n.ctes ?? {})) {
      const cte = c as PH;
      if (cte.columns?.length) this.unsupported('CTE column lists', cte);
      if (cte.using_key) this.unsupported('Recursive CTEs', cte);
      if (cte.cte_type === 'column') ctes.push({ name: String(cte.name), expr: this.expr(cte.expr), pos: posOf(cte) });
      else ctes.push({ name: String(cte.name), query: this.query(cte.expr), pos: posOf(cte) });
    }
    const windows: Record<string, WindowSpec> = {};
    for (const [name, w] of Object.entries(n.window_exprs ?? {})) windows[name] = this.window(w);
    const { from, joins } = this.from(n.select_from);
    const select: Select = {
      distinct: !!n.distinct,
      columns: (n.select ?? []).map((c: PH) => this.column(c)),
      from,
      joins,
      where: n.where ? this.expr(n.where) : null,
      groupBy: (n.group_by ?? []).map((g: PH) => this.expr(g)),
      having: n.having ? this.expr(n.having) : null,
      orderBy: (n.order_by ?? []).map((o: PH) => this.order(o)),
      limit: n.limit ? this.expr(n.limit) : null,
      offset: n.offset ? this.expr(n.offset) : null,
    };
    if (ctes.length) select.ctes = ctes;
    if (Object.keys(windows).length) select.windows = windows;
    if (n.limit_with_ties) select.withTies = true;
    return select;
  }

  order(o: PH): { expr: Node; desc: boolean } {
    if (o?.node !== 'OrderExpr') return { expr: this.expr(o), desc: false };
    return { expr: this.expr(o.expr), desc: String(o.order).toUpperCase() === 'DESC' };
  }

  private column(c: PH): Column {
    if (c?.node === 'Alias') {
      if (c.hidden) return { expr: this.expr(c.expr), alias: null };
      return { expr: this.expr(c.expr), alias: String(c.alias) };
    }
    return { expr: this.expr(c), alias: null };
  }

  private from(j: PH): { from: FromItem | null; joins: Join[] } {
    if (!j) return { from: null, joins: [] };
    const from = this.fromItem(j);
    if (j.constraint) this.unsupported('A constraint on the first table', j);
    const joins: Join[] = [];
    for (let next = j.next_join; next; next = next.next_join) {
      const type =
        JOINS[
          String(next.join_type ?? 'JOIN')
            .toUpperCase()
            .replace(/\s+/g, ' ')
        ];
      if (!type) this.unsupported(String(next.join_type), next);
      let on: Node | null = null;
      if (next.constraint) {
        if (next.constraint.constraint_type !== 'ON') this.unsupported('JOIN ... USING', next.constraint);
        on = this.expr(next.constraint.expr);
      }
      joins.push({ type, item: this.fromItem(next), on });
    }
    return { from, joins };
  }

  private fromItem(j: PH): FromItem {
    if (j.sample) this.unsupported('SAMPLE', j);
    if (j.table_final) this.unsupported('FINAL', j);
    if (j.table_args?.length) this.unsupported('Table functions', j);
    const alias = j.alias ? String(j.alias) : null;
    const t = j.table;
    if (t?.node === 'Field') {
      if (t.chain.length !== 1) this.unsupported(`The table name ${t.chain.join('.')}`, t, false);
      return { k: 'table', name: String(t.chain[0]), alias, pos: posOf(t) };
    }
    if (t?.node === 'SelectQuery' || t?.node === 'SelectSetQuery')
      return { k: 'subquery', query: this.query(t), alias, pos: posOf(t) };
    if (t?.node === 'Call') this.unsupported('Table functions', t);
    return this.unsupported(`${t?.node ?? 'This'} in FROM`, t);
  }

  private window(w: PH): WindowSpec {
    if (w.window_name) this.unsupported('A window based on another window', w);
    const bound = (b: PH): FrameBound => {
      const type = String(b.frame_type).toUpperCase();
      if (type !== 'CURRENT ROW' && type !== 'PRECEDING' && type !== 'FOLLOWING') this.unsupported(type, b);
      const value = b.frame_value === null || b.frame_value === undefined ? null : Number(b.frame_value);
      if (value !== null && (!Number.isSafeInteger(value) || value < 0))
        throw new QueryError('A window frame offset must be a whole number', posOf(b));
      return { type, value } as FrameBound;
    };
    let frame: WindowSpec['frame'] = null;
    if (w.frame_method) {
      const method = String(w.frame_method).toUpperCase();
      if (method !== 'ROWS' && method !== 'RANGE') this.unsupported(`${method} frames`, w);
      frame = {
        method: method as 'ROWS' | 'RANGE',
        start: bound(w.frame_start),
        end: w.frame_end ? bound(w.frame_end) : null,
      };
    }
    return {
      partitionBy: (w.partition_by ?? []).map((p: PH) => this.expr(p)),
      orderBy: (w.order_by ?? []).map((o: PH) => this.order(o)),
      frame,
    };
  }

  expr(n: PH): Node {
    return this.nest(n, () => this.exprInner(n));
  }

  private exprInner(n: PH): Node {
    const pos = posOf(n);
    switch (n?.node) {
      case 'Constant': {
        // Numbers beyond a double's range or precision come as text: `"Infinity"`, `"99999999999999999999"`.
        const v = n.value_type === 'number' && typeof n.value === 'string' ? Number(n.value) : n.value;
        if (typeof v === 'number' && !Number.isFinite(v)) throw new QueryError(`Number out of range: ${n.value}`, pos);
        if (v === null || typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number')
          return { k: 'const', value: v, pos };
        return this.unsupported('This constant', n);
      }
      case 'Field': {
        const chain = (n.chain as unknown[]).map(String);
        if (chain[chain.length - 1] === '*') {
          if (chain.length > 2) this.unsupported(`${chain.join('.')}`, n, false);
          return { k: 'star', table: chain.length === 2 ? chain[0]! : null, pos };
        }
        return { k: 'field', chain, pos };
      }
      case 'Alias':
        // `(x AS y)` inside an expression: the alias is for the column, not for the value.
        return this.expr(n.expr);
      case 'Placeholder': {
        const e = n.expr;
        // `{name}`, or a chain such as `{filters.dateRange.from}` or `{variables.code_name}`.
        if (e?.node !== 'Field' || !e.chain.length || e.chain.some((c: unknown) => typeof c !== 'string'))
          this.unsupported('This placeholder', n);
        return { k: 'placeholder', name: (e.chain as string[]).join('.'), pos };
      }
      case 'Not':
        return { k: 'not', arg: this.expr(n.expr), pos };
      case 'And':
      case 'Or':
        return { k: n.node === 'And' ? 'and' : 'or', args: n.exprs.map((e: PH) => this.expr(e)), pos };
      case 'ArithmeticOperation': {
        const op = String(n.op);
        if (!['+', '-', '*', '/', '%'].includes(op)) this.unsupported(`The operator ${op}`, n, false);
        const left = this.expr(n.left);
        const right = this.expr(n.right);
        // PostHog reads `-x` as `0 - x`, with a 0 that has no place in the text.
        if (op === '-' && left.k === 'const' && left.value === 0 && n.left?.start === undefined)
          return { k: 'neg', arg: right, pos };
        return { k: 'binop', op, left, right, pos };
      }
      case 'CompareOperation':
        return this.compare(n);
      case 'BetweenExpr':
        return {
          k: 'between',
          arg: this.expr(n.expr),
          low: this.expr(n.low),
          high: this.expr(n.high),
          negated: !!n.negated,
          pos,
        };
      case 'Call':
        return this.call(n);
      case 'WindowFunction': {
        if (n.args?.length) this.unsupported('Parametric functions', n);
        const call = this.callNode(String(n.name), n.exprs ?? [], false, pos);
        call.over = n.over_identifier ? { name: String(n.over_identifier) } : this.window(n.over_expr ?? {});
        return call;
      }
      case 'Array':
        return { k: 'array', items: n.exprs.map((e: PH) => this.expr(e)), pos };
      case 'Tuple':
        return this.unsupported('Tuples (outside IN)', n, true);
      case 'ArrayAccess': {
        if (n.nullish) this.unsupported('?.[]', n);
        const arr = this.expr(n.array);
        const index = this.expr(n.property);
        // `properties['key']` reads a property, as `properties.key` does.
        if (arr.k === 'field' && index.k === 'const' && typeof index.value === 'string')
          return { k: 'field', chain: [...arr.chain, index.value], pos };
        return { k: 'index', arr, index, pos };
      }
      case 'TupleAccess':
        return this.unsupported('Tuple access', n);
      case 'Lambda':
        return { k: 'lambda', params: n.args.map(String), body: this.expr(n.expr), pos };
      case 'SelectQuery':
      case 'SelectSetQuery':
        return { k: 'subquery', query: this.query(n), pos };
      default:
        return this.unsupported(n?.node ? `${n.node} expressions` : 'This expression', n);
    }
  }

  private compare(n: PH): Node {
    const pos = posOf(n);
    const op = String(n.op).toLowerCase();
    if (op === 'in' || op === 'not in' || op === 'global in' || op === 'global not in') {
      const negated = op.includes('not');
      const left = this.expr(n.left);
      const r = n.right;
      if (r?.node === 'SelectQuery' || r?.node === 'SelectSetQuery')
        return { k: 'in', left, list: null, sub: this.query(r), negated, pos };
      const items = r?.node === 'Tuple' || r?.node === 'Array' ? r.exprs : [r];
      return { k: 'in', left, list: items.map((e: PH) => this.expr(e)), sub: null, negated, pos };
    }
    const mapped = COMPARE[op];
    if (!mapped) this.unsupported(`The operator ${String(n.op)}`, n, false);
    const left = this.expr(n.left);
    const right = this.expr(n.right);
    // `x = NULL` and `x IS NULL` mean the same in HogQL.
    if ((mapped === '=' || mapped === '!=') && right.k === 'const' && right.value === null)
      return { k: 'isnull', arg: left, negated: mapped === '!=', pos };
    if ((mapped === '=' || mapped === '!=') && left.k === 'const' && left.value === null)
      return { k: 'isnull', arg: right, negated: mapped === '!=', pos };
    return { k: 'binop', op: mapped, left, right, pos };
  }

  private callNode(name: string, args: PH[], distinct: boolean, pos: number): Extract<Node, { k: 'call' }> {
    const star =
      args.length === 1 && args[0]?.node === 'Field' && args[0].chain.length === 1 && args[0].chain[0] === '*';
    return { k: 'call', name, args: star ? [] : args.map((a) => this.expr(a)), distinct, star, pos };
  }

  private call(n: PH): Node {
    const pos = posOf(n);
    const name = String(n.name);
    const parametric = n.params !== null && n.params !== undefined;
    if (parametric && !PARAMETRIC.has(name.toLowerCase())) this.unsupported('Parametric functions', n);
    if (n.filter_expr) this.unsupported('FILTER (WHERE ...)', n);
    if (n.order_by) this.unsupported('ORDER BY inside a function call', n);
    const args: PH[] = n.args ?? [];
    const lower = name.toLowerCase();
    if (lower === 'not' && args.length === 1) return { k: 'not', arg: this.expr(args[0]), pos };
    if ((lower === 'and' || lower === 'or') && args.length >= 2)
      return { k: lower, args: args.map((a) => this.expr(a)), pos };
    // How the parser writes CASE: `if`, `multiIf`, and `_caseWithExpression(x, when, then, ..., else)`.
    if (name === '_caseWithExpression') {
      const subject = this.expr(args[0]);
      const branches: [Node, Node][] = [];
      for (let i = 1; i + 1 < args.length; i += 2)
        branches.push([{ k: 'binop', op: '=', left: subject, right: this.expr(args[i]), pos }, this.expr(args[i + 1])]);
      const last = args.length % 2 === 0 ? this.expr(args[args.length - 1]) : null;
      const otherwise = last && !(last.k === 'const' && last.value === null) ? last : null;
      return { k: 'case', branches, otherwise, pos };
    }
    const call = this.callNode(name, args, !!n.distinct, pos);
    if (parametric) call.params = (n.params as PH[]).map((p) => this.expr(p));
    return call;
  }
}

export function convertQuery(ast: PH): Query {
  return new Converter().query(ast);
}

export function convertExpr(ast: PH): Node {
  return new Converter().expr(ast);
}

export function convertOrder(ast: PH): { expr: Node; desc: boolean } {
  return new Converter().order(ast);
}
