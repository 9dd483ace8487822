import { createRequire } from 'node:module';
import type nodeSqlParserModule from 'node-sql-parser/build/postgresql.js';
import {
  defaultAlias,
  HogQLError,
  printExpr,
  type CompareOp,
  type Constant,
  type Expr,
  type SelectQuery,
} from './ast.js';

// The PostgreSQL-only build: the default one holds every dialect's grammar, about 100 MB once loaded.
// Even this one holds about 15 MB, so it is loaded by the first query that needs it, not at boot.
const load = createRequire(import.meta.url);
let loaded: InstanceType<typeof nodeSqlParserModule.Parser> | undefined;
function parser(): InstanceType<typeof nodeSqlParserModule.Parser> {
  loaded ??= new (load('node-sql-parser/build/postgresql.js') as typeof nodeSqlParserModule).Parser();
  return loaded;
}
const DIALECT = { database: 'postgresql' };

export const PARSE_FAILED = 'Failed to parse query';

/** Columns of the events table that queries may name, besides `properties.<key>`. */
export const EVENT_FIELDS = [
  'uuid',
  'event',
  'distinct_id',
  'timestamp',
  'created_at',
  'elements_chain',
  'person_id',
  'properties',
  'team_id',
] as const;

export interface ParseOptions {
  /** The columns a query may name; defaults to the events table's. */
  fields?: readonly string[];
}

/**
 * PostgreSQL's grammar rejects `properties.$browser`; HogQL writes properties that way. Quoting every
 * `.$ident` outside string literals (`properties."$browser"`) makes it parse with the same meaning.
 */
function quoteDollarIdents(text: string): string {
  return text.replace(
    /('(?:[^'\\]|''|\\.)*')|\.(\$[A-Za-z_][\w$]*)/g,
    (_m, str: string | undefined, id: string) => str ?? `."${id}"`,
  );
}

function astify(text: string): any {
  try {
    return parser().astify(quoteDollarIdents(text), DIALECT);
  } catch {
    throw new HogQLError(PARSE_FAILED);
  }
}

/** The parser keeps string literals as written; HogQL escapes quotes as `''` or `\'`. */
function unescapeLiteral(s: string): string {
  return s.replace(/''|\\(.)/g, (m, c: string | undefined) =>
    m === "''" ? "'" : c === 'n' ? '\n' : c === 't' ? '\t' : c!,
  );
}

function identValue(part: unknown): string {
  if (typeof part === 'string') return part;
  const expr = (part as { expr?: { value?: unknown } })?.expr;
  if (expr && typeof expr.value === 'string') return expr.value;
  throw new HogQLError('Unsupported HogQL query');
}

class Converter {
  constructor(private fields: readonly string[]) {}

  expr(node: any): Expr {
    if (!node || typeof node !== 'object') throw new HogQLError(PARSE_FAILED);
    switch (node.type) {
      case 'column_ref':
        return this.column(node);
      case 'single_quote_string':
      case 'string':
      case 'natural_string':
        return { kind: 'constant', value: unescapeLiteral(String(node.value)) };
      case 'number':
        return { kind: 'constant', value: Number(node.value) };
      case 'bool':
        return { kind: 'constant', value: Boolean(node.value) };
      case 'null':
        return { kind: 'constant', value: null };
      case 'unary_expr':
        return this.unary(node);
      case 'binary_expr':
        return this.binary(node);
      case 'function':
      case 'aggr_func': {
        const fn = node.name?.name?.map((n: { value: string }) => n.value).join('.');
        if (String(fn).toUpperCase() === 'NOT' && node.args?.value?.length === 1)
          return { kind: 'not', expr: this.condition(node.args.value[0]) };
        const name = node.name?.name?.map((n: { value: string }) => n.value).join('.') ?? node.name;
        throw new HogQLError(`Unsupported HogQL query: function ${String(name)}() is not supported`);
      }
      default:
        throw new HogQLError('Unsupported HogQL query');
    }
  }

  private column(node: any): Expr {
    if (node.column === '*') throw new HogQLError('Unsupported HogQL query: select the fields to export instead of *');
    const path = [node.db, node.schema, node.table].filter((p) => p !== null && p !== undefined).map(String);
    path.push(identValue(node.column));
    for (const index of node.array_index ?? []) {
      const i = index.index;
      if (!i || (i.type !== 'single_quote_string' && i.type !== 'string' && i.type !== 'number')) {
        throw new HogQLError('Unsupported HogQL query');
      }
      path.push(String(i.value));
    }
    if (path[0] === 'events' && path.length > 1) path.shift();
    const [head, ...rest] = path;
    if (head === 'properties' && rest.length) return { kind: 'property', path: rest };
    if (rest.length || !this.fields.includes(head!)) {
      throw new HogQLError(`Invalid HogQL query: Unable to resolve field: ${path.join('.')}`);
    }
    return { kind: 'field', name: head! };
  }

  private unary(node: any): Expr {
    const op = String(node.operator).toUpperCase();
    if (op === 'NOT') return { kind: 'not', expr: this.condition(node.expr) };
    if (op === '-') {
      const inner = this.expr(node.expr);
      if (inner.kind === 'constant' && typeof inner.value === 'number')
        return { kind: 'constant', value: -inner.value };
    }
    throw new HogQLError('Unsupported HogQL query');
  }

  private binary(node: any): Expr {
    const op = String(node.operator).toUpperCase();
    if (op === 'AND' || op === 'OR') return this.logical(node);
    if (op === 'IN' || op === 'NOT IN') {
      const list = node.right?.type === 'expr_list' ? node.right.value : null;
      if (!Array.isArray(list) || !list.length) throw new HogQLError('Unsupported HogQL query');
      return {
        kind: 'in',
        negated: op === 'NOT IN',
        left: this.value(node.left),
        values: list.map((v: any) => this.value(v)),
      };
    }
    if (op === 'IS' || op === 'IS NOT') {
      if (node.right?.type !== 'null') throw new HogQLError('Unsupported HogQL query');
      return { kind: 'isNull', negated: op === 'IS NOT', expr: this.value(node.left) };
    }
    const compare: Record<string, CompareOp> = {
      '=': '=',
      '==': '=',
      '!=': '!=',
      '<>': '!=',
      '<': '<',
      '<=': '<=',
      '>': '>',
      '>=': '>=',
      LIKE: 'LIKE',
      ILIKE: 'ILIKE',
      'NOT LIKE': 'NOT LIKE',
      'NOT ILIKE': 'NOT ILIKE',
    };
    const mapped = compare[op];
    if (!mapped) throw new HogQLError(`Unsupported HogQL query: operator ${op} is not supported`);
    const left = this.value(node.left);
    const right = this.value(node.right);
    // `x = NULL` means what the user meant: `x IS NULL`.
    if (right.kind === 'constant' && right.value === null && (mapped === '=' || mapped === '!=')) {
      return { kind: 'isNull', negated: mapped === '!=', expr: left };
    }
    return { kind: 'compare', op: mapped, left, right };
  }

  /**
   * The parser gives AND and OR the same precedence (`a OR b AND c` comes back as `(a OR b) AND c`),
   * so the unparenthesised chain is read back in order and regrouped with AND binding tighter.
   */
  private logical(node: any): Expr {
    const operands: any[] = [];
    const ops: string[] = [];
    const walk = (n: any, top: boolean) => {
      const op = n?.type === 'binary_expr' ? String(n.operator).toUpperCase() : '';
      if ((op === 'AND' || op === 'OR') && (top || !n.parentheses)) {
        walk(n.left, false);
        ops.push(op);
        walk(n.right, false);
      } else operands.push(n);
    };
    walk(node, true);
    const groups: any[][] = [[operands[0]]];
    for (const [i, op] of ops.entries()) {
      if (op === 'AND') groups[groups.length - 1]!.push(operands[i + 1]);
      else groups.push([operands[i + 1]]);
    }
    const ands = groups.map((g): Expr => {
      const exprs = g.map((n) => this.condition(n)).flatMap((e) => (e.kind === 'and' ? e.exprs : [e]));
      return exprs.length === 1 ? exprs[0]! : { kind: 'and', exprs };
    });
    if (ands.length === 1) return ands[0]!;
    return { kind: 'or', exprs: ands.flatMap((e) => (e.kind === 'or' ? e.exprs : [e])) };
  }

  /** An operand: a field, a property or a constant, never a condition. */
  value(node: any): Expr {
    const e = this.expr(node);
    if (e.kind !== 'field' && e.kind !== 'property' && e.kind !== 'constant') {
      throw new HogQLError(`Unsupported HogQL query: ${printExpr(e)} is not a value`);
    }
    return e;
  }

  /** A boolean: a comparison, IN, IS NULL, or a combination of them. */
  condition(node: any): Expr {
    const e = this.expr(node);
    if (e.kind === 'field' || e.kind === 'property' || e.kind === 'constant') {
      throw new HogQLError(`Unsupported HogQL query: ${printExpr(e)} is not a condition`);
    }
    return e;
  }
}

function singleStatement(ast: any): any {
  const statements = Array.isArray(ast) ? ast : [ast];
  if (statements.length !== 1) throw new HogQLError(PARSE_FAILED);
  return statements[0];
}

/**
 * Parses `SELECT <field or properties.<key>> [AS alias], ... FROM events [WHERE <conditions>]`.
 * Throws HogQLError with PostHog's wording for UNIONs, JOINs, other tables and parse failures.
 */
export function parseSelect(text: string, options: ParseOptions = {}): SelectQuery {
  const stmt = singleStatement(astify(text));
  if (stmt.type !== 'select') throw new HogQLError(PARSE_FAILED);
  if (stmt._next || stmt.set_op) throw new HogQLError('UNIONs are not supported');
  if (stmt.with) throw new HogQLError('Subqueries or CTEs are not supported');
  const from = stmt.from as any[] | null;
  if (!from?.length) throw new HogQLError('Query must SELECT FROM events');
  if (from[0].expr?.ast || from[0].expr?.type === 'select')
    throw new HogQLError('Subqueries or CTEs are not supported');
  if (from[0].table !== 'events' || (from[0].db && from[0].db !== 'public')) {
    throw new HogQLError('Query must only SELECT FROM events');
  }
  if (from.length > 1) throw new HogQLError('JOINs are not supported');
  if (stmt.groupby || stmt.having || stmt.orderby || stmt.window || stmt.limit?.value?.length || stmt.distinct?.type) {
    throw new HogQLError('Unsupported HogQL query: only fields and a WHERE clause are supported');
  }
  const converter = new Converter(options.fields ?? EVENT_FIELDS);
  const seen = new Set<string>();
  const fields = (stmt.columns as any[]).map((column) => {
    const expr = converter.expr(column.expr);
    if (expr.kind !== 'field' && expr.kind !== 'property' && expr.kind !== 'constant') {
      throw new HogQLError(`Unsupported HogQL query: ${printExpr(expr)} cannot be exported as a field`);
    }
    const alias = column.as
      ? identValue(typeof column.as === 'string' ? column.as : { expr: column.as })
      : defaultAlias(expr);
    if (seen.has(alias))
      throw new HogQLError(`Invalid HogQL query: the field name "${alias}" is used twice; give one an alias`);
    seen.add(alias);
    return { expr, alias, expression: printExpr(expr) };
  });
  const where = stmt.where ? converter.condition(stmt.where) : null;
  return { fields, where };
}

/** Parses one value expression (a field, a property or a constant), e.g. for a `select` parameter. */
export function parseExpr(text: string, options: ParseOptions = {}): Expr {
  const stmt = singleStatement(astify(`SELECT ${text} FROM events`));
  if (stmt.type !== 'select' || stmt._next || stmt.columns?.length !== 1 || stmt.from?.length !== 1) {
    throw new HogQLError(PARSE_FAILED);
  }
  return new Converter(options.fields ?? EVENT_FIELDS).value(stmt.columns[0].expr);
}

/** Parses one boolean condition, e.g. for a `where` parameter. */
export function parseCondition(text: string, options: ParseOptions = {}): Expr {
  const stmt = singleStatement(astify(`SELECT 1 FROM events WHERE ${text}`));
  if (stmt.type !== 'select' || stmt._next || !stmt.where || stmt.from?.length !== 1 || stmt.groupby || stmt.orderby) {
    throw new HogQLError(PARSE_FAILED);
  }
  return new Converter(options.fields ?? EVENT_FIELDS).condition(stmt.where);
}

export type { Constant };
