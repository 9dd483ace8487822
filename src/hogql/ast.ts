/** The subset of HogQL this server understands: fields, properties, constants and simple conditions. */
export type Constant = string | number | boolean | null;

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=' | 'LIKE' | 'ILIKE' | 'NOT LIKE' | 'NOT ILIKE';

export type Expr =
  /** A top-level column of the table: `event`, `timestamp`, `properties` as a whole... */
  | { kind: 'field'; name: string }
  /** A path into the `properties` JSON: `properties.$browser`, `properties['$set']['email']`. */
  | { kind: 'property'; path: string[] }
  | { kind: 'constant'; value: Constant }
  | { kind: 'compare'; op: CompareOp; left: Expr; right: Expr }
  | { kind: 'in'; negated: boolean; left: Expr; values: Expr[] }
  | { kind: 'isNull'; negated: boolean; expr: Expr }
  | { kind: 'and' | 'or'; exprs: Expr[] }
  | { kind: 'not'; expr: Expr };

export interface SelectField {
  expr: Expr;
  alias: string;
  /** The field's expression printed back as HogQL. */
  expression: string;
}

export interface SelectQuery {
  fields: SelectField[];
  where: Expr | null;
}

export class HogQLError extends Error {}

const IDENT = /^[A-Za-z_$][\w$]*$/;

function quote(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Prints an expression as canonical HogQL, for the export's `schema` and for logs. */
export function printExpr(e: Expr): string {
  switch (e.kind) {
    case 'field':
      return e.name;
    case 'property':
      return `properties${e.path.map((p) => (IDENT.test(p) ? `.${p}` : `[${quote(p)}]`)).join('')}`;
    case 'constant':
      if (e.value === null) return 'NULL';
      if (typeof e.value === 'string') return quote(e.value);
      return String(e.value);
    case 'compare':
      return `${printExpr(e.left)} ${e.op} ${printExpr(e.right)}`;
    case 'in':
      return `${printExpr(e.left)} ${e.negated ? 'NOT IN' : 'IN'} (${e.values.map(printExpr).join(', ')})`;
    case 'isNull':
      return `${printExpr(e.expr)} IS ${e.negated ? 'NOT NULL' : 'NULL'}`;
    case 'and':
    case 'or':
      return e.exprs
        .map((x) => (x.kind === 'and' || x.kind === 'or' ? `(${printExpr(x)})` : printExpr(x)))
        .join(` ${e.kind.toUpperCase()} `);
    case 'not':
      return `NOT (${printExpr(e.expr)})`;
  }
}

export function printSelect(q: SelectQuery): string {
  const fields = q.fields.map((f) =>
    f.alias === defaultAlias(f.expr) ? f.expression : `${f.expression} AS ${f.alias}`,
  );
  return `SELECT ${fields.join(', ')} FROM events${q.where ? ` WHERE ${printExpr(q.where)}` : ''}`;
}

/** A field without `AS` is named after its column, or after the last key of its property path. */
export function defaultAlias(e: Expr): string {
  if (e.kind === 'field') return e.name;
  if (e.kind === 'property') return e.path[e.path.length - 1]!;
  return printExpr(e);
}
