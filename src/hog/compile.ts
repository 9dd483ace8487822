// Compiles the parser's AST of a Hog program or HogQL expression to HogVM bytecode, following PostHog's
// bytecode compiler (posthog/hogql/compiler/bytecode.py) step for step, so that the same source gives the
// same bytecode there and here.
import hogvm from '@posthog/hogvm';
import { HogCompileError } from './errors.js';
import { type AstNode, isFloat, parseHog } from './parse.js';
import { ARITHMETIC_OPS, BYTECODE_IDENTIFIER, BYTECODE_VERSION, COMPARE_OPS, Op } from './operation.js';

/** Functions of the VM's library written in Hog (PostHog's BYTECODE_STL), callable like the native ones. */
const BYTECODE_STL_NAMES = [
  'arrayCount',
  'arrayExists',
  'arrayFilter',
  'arrayMap',
  'arrayReduce',
  'inCohort',
  'notInCohort',
  'sortableSemver',
];
const KNOWN_FUNCTIONS = new Set([...Object.keys(hogvm.STL), ...Object.keys(hogvm.ASYNC_STL), ...BYTECODE_STL_NAMES]);

/** Node kinds that are statements (PostHog's ast.Statement subclasses); the rest are expressions. */
const STATEMENTS = new Set([
  'Block',
  'ExprStatement',
  'ReturnStatement',
  'ThrowStatement',
  'TryCatchStatement',
  'IfStatement',
  'WhileStatement',
  'ForStatement',
  'ForInStatement',
  'Function',
  'VariableDeclaration',
  'VariableAssignment',
]);

export type Bytecode = unknown[];

/** A remark on the source, as PostHog's HogQLContext collects them (an unknown global, a missing function). */
export interface CompileNotice {
  message: string;
  start?: number;
  end?: number;
}

export interface CompileOptions {
  /** Functions the caller provides beyond the VM's library (PostHog: `fetch`, `postHogCapture` for destinations). */
  supportedFunctions?: Iterable<string>;
  /** Keep the outermost scope's locals on the stack, as PostHog's REPL does. */
  inRepl?: boolean;
}

export interface CompiledHog {
  bytecode: Bytecode;
  /** "Hog function `x` is not implemented": PostHog compiles anyway, and refuses such filters. */
  errors: CompileNotice[];
  /** Unknown globals and the like: informative only. */
  warnings: CompileNotice[];
}

interface Local {
  name: string;
  depth: number;
  isCaptured: boolean;
}

interface UpValue {
  index: number;
  isLocal: boolean;
}

interface Context {
  supportedFunctions: Set<string>;
  errors: CompileNotice[];
  warnings: CompileNotice[];
}

const node = (kind: string, fields: Record<string, unknown>): AstNode => ({ node: kind, ...fields });
const field = (...chain: (string | number)[]): AstNode => node('Field', { chain });

function fail(message: string, at?: AstNode): never {
  throw new HogCompileError(message, at?.start?.offset, at?.end?.offset);
}

function notice(at: AstNode, message: string): CompileNotice {
  return { message, start: at.start?.offset, end: at.end?.offset };
}

class Compiler {
  readonly locals: Local[] = [];
  readonly upvalues: UpValue[] = [];
  private scopeDepth = 0;

  constructor(
    private readonly ctx: Context,
    private readonly enclosing?: Compiler,
    args?: string[],
    private readonly inRepl = false,
  ) {
    for (const arg of args ?? []) this.declareLocal(arg);
  }

  private startScope(): void {
    this.scopeDepth++;
  }

  private endScope(): Bytecode {
    this.scopeDepth--;
    if (this.inRepl && this.scopeDepth === 0) return [];
    const out: Bytecode = [];
    for (let i = this.locals.length - 1; i >= 0; i--) {
      const local = this.locals[i]!;
      if (local.depth <= this.scopeDepth) break;
      this.locals.pop();
      out.push(local.isCaptured ? Op.CLOSE_UPVALUE : Op.POP);
    }
    return out;
  }

  private declareLocal(name: string, at?: AstNode): number {
    for (let i = this.locals.length - 1; i >= 0; i--) {
      const local = this.locals[i]!;
      if (local.depth < this.scopeDepth) break;
      if (local.name === name) fail(`Variable \`${name}\` already declared in this scope`, at);
    }
    this.locals.push({ name, depth: this.scopeDepth, isCaptured: false });
    return this.locals.length - 1;
  }

  private findLocal(name: unknown): number {
    for (let i = this.locals.length - 1; i >= 0; i--) if (this.locals[i]!.name === name) return i;
    return -1;
  }

  private addUpvalue(index: number, isLocal: boolean): number {
    const found = this.upvalues.findIndex((u) => u.index === index && u.isLocal === isLocal);
    if (found !== -1) return found;
    this.upvalues.push({ index, isLocal });
    return this.upvalues.length - 1;
  }

  private resolveUpvalue(name: string): number {
    if (!this.enclosing) return -1;
    const local = this.enclosing.findLocal(name);
    if (local !== -1) {
      this.enclosing.locals[local]!.isCaptured = true;
      return this.addUpvalue(local, true);
    }
    const upvalue = this.enclosing.resolveUpvalue(name);
    return upvalue === -1 ? -1 : this.addUpvalue(upvalue, false);
  }

  /** PostHog's visitor returns None for a missing node. */
  visit(n: AstNode | null | undefined): Bytecode {
    if (n === null || n === undefined) return [];
    const method = VISITORS[n.node];
    if (!method) fail(`${n.node} is not supported in Hog`, n);
    return method.call(this, n);
  }

  visitAll(nodes: AstNode[]): Bytecode {
    return nodes.flatMap((n) => this.visit(n));
  }

  And(n: AstNode): Bytecode {
    const exprs = n.exprs as AstNode[];
    return [...this.visitAll(exprs), Op.AND, exprs.length];
  }

  Or(n: AstNode): Bytecode {
    const exprs = n.exprs as AstNode[];
    return [...this.visitAll(exprs), Op.OR, exprs.length];
  }

  Not(n: AstNode): Bytecode {
    return [...this.visit(n.expr as AstNode), Op.NOT];
  }

  CompareOperation(n: AstNode): Bytecode {
    const op = COMPARE_OPS[n.op as string];
    if (op === undefined) fail(`Operator ${String(n.op)} is not supported in Hog`, n);
    if (op === Op.IN_COHORT || op === Op.NOT_IN_COHORT) {
      const right = n.right as AstNode;
      let cohort = '';
      if (right.node === 'Constant') {
        cohort = Number.isInteger(right.value) ? ` (cohort id=${right.value})` : ` (cohort: ${constText(right.value)})`;
      }
      fail(`Can't use cohorts in real-time filters. Please inline the relevant expressions${cohort}.`, n);
    }
    return [...this.visit(n.right as AstNode), ...this.visit(n.left as AstNode), op];
  }

  BetweenExpr(n: AstNode): Bytecode {
    const [expr, low, high] = [n.expr, n.low, n.high] as AstNode[];
    if (n.negated) {
      const below = [...this.visit(low), ...this.visit(expr), Op.LT];
      const above = [...this.visit(high), ...this.visit(expr), Op.GT];
      return [...below, ...above, Op.OR, 2];
    }
    const fromLow = [...this.visit(low), ...this.visit(expr), Op.GT_EQ];
    const toHigh = [...this.visit(high), ...this.visit(expr), Op.LT_EQ];
    return [...fromLow, ...toHigh, Op.AND, 2];
  }

  ArithmeticOperation(n: AstNode): Bytecode {
    const op = ARITHMETIC_OPS[n.op as string];
    if (op === undefined) fail(`Operator ${String(n.op)} is not supported in Hog`, n);
    return [...this.visit(n.right as AstNode), ...this.visit(n.left as AstNode), op];
  }

  /** GET_LOCAL or GET_UPVALUE for a name, or nothing if it is neither. */
  private getVariable(name: unknown): Bytecode {
    const local = this.findLocal(name);
    if (local !== -1) return [Op.GET_LOCAL, local];
    const upvalue = this.resolveUpvalue(String(name));
    return upvalue === -1 ? [] : [Op.GET_UPVALUE, upvalue];
  }

  Field(n: AstNode): Bytecode {
    const chain = n.chain as (string | number)[];
    const ops = this.getVariable(chain[0]);
    if (ops.length > 0) {
      for (const element of chain.slice(1)) ops.push(...key(element), Op.GET_PROPERTY);
      return ops;
    }
    this.ctx.warnings.push(notice(n, `Unknown global variable: ${String(chain[0])}`));
    const out: Bytecode = [];
    for (const element of [...chain].reverse()) out.push(Op.STRING, element);
    return [...out, Op.GET_GLOBAL, chain.length];
  }

  TupleAccess(n: AstNode): Bytecode {
    const get = n.nullish ? Op.GET_PROPERTY_NULLISH : Op.GET_PROPERTY;
    return [...this.visit(n.tuple as AstNode), Op.INTEGER, n.index, get];
  }

  ArrayAccess(n: AstNode): Bytecode {
    const property = n.property as AstNode;
    if (property.node === 'Constant' && property.value === 0) fail('Array access starts from 1', n);
    const get = n.nullish ? Op.GET_PROPERTY_NULLISH : Op.GET_PROPERTY;
    return [...this.visit(n.array as AstNode), ...this.visit(property), get];
  }

  Constant(n: AstNode): Bytecode {
    const value = n.value;
    if (value === true) return [Op.TRUE];
    if (value === false) return [Op.FALSE];
    if (value === null || value === undefined) return [Op.NULL];
    if (isFloat(value)) return [Op.FLOAT, value.$float];
    if (typeof value === 'number') return Number.isInteger(value) ? [Op.INTEGER, value] : [Op.FLOAT, value];
    if (typeof value === 'string') return [Op.STRING, value];
    fail(`Constant type \`${typeof value}\` is not supported`, n);
  }

  private ifElse(cond: Bytecode, then: Bytecode, otherwise: Bytecode | undefined): Bytecode {
    const hasElse = otherwise !== undefined && otherwise.length > 0;
    const out = [...cond, Op.JUMP_IF_FALSE, then.length + (hasElse ? 2 : 0), ...then];
    if (hasElse) out.push(Op.JUMP, otherwise.length, ...otherwise);
    return out;
  }

  Call(n: AstNode): Bytecode {
    const name = n.name as string;
    const args = (n.args as AstNode[] | null) ?? [];
    if (name === 'not' && args.length === 1) return [...this.visit(args[0]), Op.NOT];
    if ((name === 'and' || name === 'or') && args.length > 1) {
      return [...this.visitAll(args), name === 'and' ? Op.AND : Op.OR, args.length];
    }
    if (name === 'if' && args.length >= 2) {
      const [cond, then] = [this.visit(args[0]), this.visit(args[1])];
      return this.ifElse(cond, then, args.length === 3 ? this.visit(args[2]) : undefined);
    }
    if (name === 'multiIf' && args.length >= 2) {
      if (args.length <= 3) return this.Call(node('Call', { name: 'if', args }));
      let prev: Bytecode | undefined = args.length % 2 === 0 ? undefined : this.visit(args[args.length - 1]);
      for (let i = args.length - 2 - (args.length % 2); i >= 0; i -= 2) {
        prev = this.ifElse(this.visit(args[i]), this.visit(args[i + 1]), prev);
      }
      return prev!;
    }
    if (name === 'ifNull' && args.length === 2) {
      const [expr, ifNull] = [this.visit(args[0]), this.visit(args[1])];
      return [...expr, Op.JUMP_IF_STACK_NOT_NULL, ifNull.length + 1, Op.POP, ...ifNull];
    }
    if (name === 'sql' && args.length === 1) fail('sql() is not supported in Hog functions', n);

    // HogQL functions may take two sets of arguments: name(params)(args).
    const params = n.params as AstNode[] | null | undefined;
    const first = params ?? args;
    let out = this.visitAll(first);
    if (this.findLocal(name) !== -1) {
      out.push(...this.Field(field(name)), Op.CALL_LOCAL, first.length);
    } else {
      const upvalue = this.resolveUpvalue(name);
      if (upvalue !== -1) {
        out.push(Op.GET_UPVALUE, upvalue, Op.CALL_LOCAL, first.length);
      } else {
        if (!this.ctx.supportedFunctions.has(name) && !KNOWN_FUNCTIONS.has(name)) {
          this.ctx.errors.push(notice(n, `Hog function \`${name}\` is not implemented`));
        }
        out.push(Op.CALL_GLOBAL, name, first.length);
      }
    }
    if (params !== null && params !== undefined) {
      out = [...this.visitAll(args), ...out, Op.CALL_LOCAL, args.length];
    }
    return out;
  }

  ExprCall(n: AstNode): Bytecode {
    const args = n.args as AstNode[];
    return [...this.visitAll(args), ...this.visit(n.expr as AstNode), Op.CALL_LOCAL, args.length];
  }

  Program(n: AstNode): Bytecode {
    return this.Block(n);
  }

  Block(n: AstNode): Bytecode {
    this.startScope();
    const out = this.visitAll(n.declarations as AstNode[]);
    return [...out, ...this.endScope()];
  }

  ExprStatement(n: AstNode): Bytecode {
    const expr = n.expr as AstNode | null;
    if (!expr) return [];
    if (expr.node === 'CompareOperation' && expr.op === '==') {
      this.ctx.warnings.push(notice(n, "You must use ':=' for assignment instead of '='."));
    }
    return [...this.visit(expr), Op.POP];
  }

  ReturnStatement(n: AstNode): Bytecode {
    const expr = n.expr as AstNode | null;
    return [...(expr ? this.visit(expr) : [Op.NULL]), Op.RETURN];
  }

  ThrowStatement(n: AstNode): Bytecode {
    return [...this.visit(n.expr as AstNode), Op.THROW];
  }

  TryCatchStatement(n: AstNode): Bytecode {
    if (n.finally_stmt) fail('finally blocks are not yet supported', n);
    const catches = (n.catches as [string | null, string | null, AstNode][] | null) ?? [];
    if (catches.length === 0) fail('try statement must have at least one catch block', n);

    const tryStmt = this.visit(n.try_stmt as AstNode);
    const out: Bytecode = [Op.TRY, tryStmt.length + 2 + 2, ...tryStmt, Op.POP_TRY];

    const endPositions: number[] = [];
    const body: Bytecode = [];
    this.startScope();
    // The VM pushes the error; its type is kept beside it for the typed catches.
    this.declareLocal('e');
    body.push(...this.Field(field('e', 'type')));
    this.declareLocal('type');
    for (const [catchVar, catchType, stmt] of catches) {
      const name = catchVar ?? 'e';
      const type = catchType ?? 'Error';
      this.startScope();
      if (type === 'Error') {
        if (name !== 'e') {
          this.declareLocal(name);
          body.push(...this.Field(field('e')));
        }
        body.push(...this.visit(stmt), ...this.endScope(), Op.JUMP, null);
        endPositions.push(body.length - 1);
      } else {
        const compare = this.CompareOperation(
          node('CompareOperation', { op: '==', left: field('type'), right: node('Constant', { value: type }) }),
        );
        body.push(...compare, Op.JUMP_IF_FALSE);
        const catchBody: Bytecode = [];
        if (name !== 'e') {
          this.declareLocal(name);
          catchBody.push(...this.Field(field('e')));
        }
        catchBody.push(...this.visit(stmt));
        const endScope = this.endScope();
        catchBody.push(...endScope);
        body.push(catchBody.length + 2 - endScope.length, ...catchBody, Op.JUMP, null);
        endPositions.push(body.length - 1);
      }
    }
    // Nothing matched: the error goes on up.
    body.push(Op.POP, Op.THROW);
    const endScope = this.endScope();
    body.push(...endScope);
    for (const position of endPositions) body[position] = body.length - position - endScope.length - 1;
    return [...out, Op.JUMP, body.length, ...body];
  }

  IfStatement(n: AstNode): Bytecode {
    const expr = this.visit(n.expr as AstNode);
    const then = this.visit(n.then as AstNode);
    return this.ifElse(expr, then, n.else_ ? this.visit(n.else_ as AstNode) : undefined);
  }

  WhileStatement(n: AstNode): Bytecode {
    const expr = this.visit(n.expr as AstNode);
    const body = this.visit(n.body as AstNode);
    const out = [...expr, Op.JUMP_IF_FALSE, body.length + 2, ...body];
    out.push(Op.JUMP, -out.length - 2);
    return out;
  }

  ForStatement(n: AstNode): Bytecode {
    const initializer = n.initializer as AstNode | null;
    if (initializer) this.startScope();
    const init = this.visit(initializer);
    const condition = this.visit(n.condition as AstNode | null);
    const increment = this.visit(n.increment as AstNode | null);
    const body = this.visit(n.body as AstNode | null);
    const out = [...init, ...condition, Op.JUMP_IF_FALSE, body.length + increment.length + 2, ...body, ...increment];
    out.push(Op.JUMP, -increment.length - body.length - 2 - condition.length - 2);
    if (initializer) out.push(...this.endScope());
    return out;
  }

  ForInStatement(n: AstNode): Bytecode {
    const out: Bytecode = [];
    this.startScope();
    const keyVar = n.keyVar as string | null;
    const valueVar = n.valueVar as string;
    const exprLocal = this.declareLocal('__H_expr_H__');
    out.push(...this.visit(n.expr as AstNode));
    let keysLocal = -1;
    if (keyVar !== null && keyVar !== undefined) {
      keysLocal = this.declareLocal('__H_keys_H__');
      out.push(Op.GET_LOCAL, exprLocal, Op.CALL_GLOBAL, 'keys', 1);
    }
    const valuesLocal = this.declareLocal('__H_values_H__');
    out.push(Op.GET_LOCAL, exprLocal, Op.CALL_GLOBAL, 'values', 1);
    const indexLocal = this.declareLocal('__H_index_H__');
    out.push(Op.INTEGER, 1);
    const limitLocal = this.declareLocal('__H_limit_H__');
    out.push(Op.GET_LOCAL, valuesLocal, Op.CALL_GLOBAL, 'length', 1);
    let keyLocal = -1;
    if (keyVar !== null && keyVar !== undefined) {
      keyLocal = this.declareLocal(keyVar, n);
      out.push(Op.NULL);
    }
    const valueLocal = this.declareLocal(valueVar, n);
    out.push(Op.NULL);

    const condition = [Op.GET_LOCAL, limitLocal, Op.GET_LOCAL, indexLocal, Op.LT_EQ];
    const body: Bytecode = [];
    if (keyLocal !== -1) {
      body.push(Op.GET_LOCAL, keysLocal, Op.GET_LOCAL, indexLocal, Op.GET_PROPERTY, Op.SET_LOCAL, keyLocal);
    }
    body.push(Op.GET_LOCAL, valuesLocal, Op.GET_LOCAL, indexLocal, Op.GET_PROPERTY, Op.SET_LOCAL, valueLocal);
    body.push(...this.visit(n.body as AstNode));
    const increment = [Op.GET_LOCAL, indexLocal, Op.INTEGER, 1, Op.PLUS, Op.SET_LOCAL, indexLocal];
    out.push(...condition, Op.JUMP_IF_FALSE, body.length + increment.length + 2, ...body, ...increment);
    out.push(Op.JUMP, -increment.length - body.length - 2 - condition.length - 2);
    out.push(...this.endScope());
    return out;
  }

  VariableDeclaration(n: AstNode): Bytecode {
    this.declareLocal(n.name as string, n);
    return n.expr ? this.visit(n.expr as AstNode) : [Op.NULL];
  }

  VariableAssignment(n: AstNode): Bytecode {
    const left = n.left as AstNode;
    const right = n.right as AstNode;
    if (left.node === 'TupleAccess') {
      return [...this.visit(left.tuple as AstNode), Op.INTEGER, left.index, ...this.visit(right), Op.SET_PROPERTY];
    }
    if (left.node === 'ArrayAccess') {
      const target = [...this.visit(left.array as AstNode), ...this.visit(left.property as AstNode)];
      return [...target, ...this.visit(right), Op.SET_PROPERTY];
    }
    if (left.node === 'Field' && (left.chain as unknown[]).length >= 1) {
      const chain = left.chain as (string | number)[];
      const name = chain[0]!;
      const local = this.findLocal(name);
      const upvalue = local === -1 ? this.resolveUpvalue(String(name)) : -1;
      if (local === -1 && upvalue === -1) {
        fail(`Variable "${name}" not declared in this scope. Can not assign to globals.`, n);
      }
      if (chain.length === 1) {
        return [...this.visit(right), ...(local !== -1 ? [Op.SET_LOCAL, local] : [Op.SET_UPVALUE, upvalue])];
      }
      // A property of a local or captured object.
      const out: Bytecode = local !== -1 ? [Op.GET_LOCAL, local] : [Op.GET_UPVALUE, upvalue];
      for (const element of chain.slice(1, -1)) out.push(...key(element), Op.GET_PROPERTY);
      return [...out, ...key(chain[chain.length - 1]!), ...this.visit(right), Op.SET_PROPERTY];
    }
    fail('Can not assign to this type of expression', n);
  }

  private compileFunction(name: string, params: string[], body: AstNode): Bytecode {
    const inner = new Compiler(this.ctx, this, params);
    const code = inner.visit(body);
    const out: Bytecode = [Op.CALLABLE, name, params.length, inner.upvalues.length, code.length, ...code];
    out.push(Op.CLOSURE, inner.upvalues.length);
    for (const u of inner.upvalues) out.push(u.isLocal, u.index);
    return out;
  }

  Function(n: AstNode): Bytecode {
    let body = n.body as AstNode;
    const returnNull = node('ReturnStatement', { expr: null });
    // `fn x() {foo}` may come out of the parser as a placeholder.
    if (body.node === 'Placeholder') {
      body = node('Block', { declarations: [node('ExprStatement', { expr: body.expr }), returnNull] });
    } else if (body.node === 'Block') {
      const declarations = body.declarations as AstNode[];
      if (declarations.length === 0 || declarations[declarations.length - 1]!.node !== 'ReturnStatement') {
        body = node('Block', { declarations: [...declarations, returnNull] });
      }
    } else if (body.node !== 'ReturnStatement') {
      body = node('Block', { declarations: [body, returnNull] });
    }
    this.declareLocal(n.name as string, n);
    return this.compileFunction(n.name as string, n.params as string[], body);
  }

  Lambda(n: AstNode): Bytecode {
    let expr = n.expr as AstNode;
    const returnNull = node('ReturnStatement', { expr: null });
    if (expr.node === 'Placeholder') {
      expr = node('Block', { declarations: [node('ExprStatement', { expr: expr.expr }), returnNull] });
    } else if (expr.node === 'Block') {
      const declarations = expr.declarations as AstNode[];
      if (declarations.length === 0 || declarations[declarations.length - 1]!.node !== 'ReturnStatement') {
        expr = node('Block', { declarations: [...declarations, returnNull] });
      }
    } else if (expr.node !== 'ReturnStatement') {
      expr = STATEMENTS.has(expr.node)
        ? node('Block', { declarations: [expr, returnNull] })
        : node('ReturnStatement', { expr });
    }
    return this.compileFunction('lambda', n.args as string[], expr);
  }

  Dict(n: AstNode): Bytecode {
    const items = n.items as [AstNode, AstNode][];
    const out: Bytecode = [];
    for (const [k, v] of items) out.push(...this.visit(k), ...this.visit(v));
    return [...out, Op.DICT, items.length];
  }

  Array(n: AstNode): Bytecode {
    const exprs = n.exprs as AstNode[];
    return [...this.visitAll(exprs), Op.ARRAY, exprs.length];
  }

  Tuple(n: AstNode): Bytecode {
    const exprs = n.exprs as AstNode[];
    return [...this.visitAll(exprs), Op.TUPLE, exprs.length];
  }

  HogQLXTag(n: AstNode): Bytecode {
    const kind = n.kind as string;
    const attributes = (n.attributes as AstNode[]) ?? [];
    const callable = this.findLocal(kind) !== -1 || this.resolveUpvalue(kind) !== -1;
    const attrs: Bytecode = [];
    for (const a of attributes) attrs.push(...this.xValue(a.name), ...this.xValue(a.value));
    if (callable) {
      return [...attrs, Op.DICT, attributes.length, ...this.Field(field(kind)), Op.CALL_LOCAL, 1];
    }
    return [Op.STRING, '__hx_tag', Op.STRING, kind, ...attrs, Op.DICT, attributes.length + 1];
  }

  private xValue(value: unknown): Bytecode {
    if (Array.isArray(value)) return [...value.flatMap((v) => this.xValue(v)), Op.ARRAY, value.length];
    if (isFloat(value)) return [Op.FLOAT, value.$float];
    if (typeof value === 'object' && value !== null) {
      if ('node' in value) return this.visit(value as AstNode);
      const entries = Object.entries(value);
      return [...entries.flatMap(([k, v]) => [...this.xValue(k), ...this.xValue(v)]), Op.DICT, entries.length];
    }
    if (typeof value === 'number') return Number.isInteger(value) ? [Op.INTEGER, value] : [Op.FLOAT, value];
    if (typeof value === 'string') return [Op.STRING, value];
    if (value === true) return [Op.TRUE];
    if (value === false) return [Op.FALSE];
    return [Op.NULL];
  }

  Placeholder(n: AstNode): Bytecode {
    fail('Placeholders are not allowed in this context', n);
  }
}

type Visitor = (this: Compiler, n: AstNode) => Bytecode;
const VISITORS: Record<string, Visitor> = Object.create(null);
for (const name of Object.getOwnPropertyNames(Compiler.prototype)) {
  if (/^[A-Z]/.test(name)) VISITORS[name] = (Compiler.prototype as unknown as Record<string, Visitor>)[name]!;
}

function key(element: string | number): Bytecode {
  return typeof element === 'number' ? [Op.INTEGER, element] : [Op.STRING, String(element)];
}

function constText(value: unknown): string {
  return isFloat(value) ? String(value.$float) : String(value);
}

/** Bytecode of an AST, with the `_H` header: PostHog's create_bytecode. */
export function compileAst(ast: AstNode, options: CompileOptions = {}): CompiledHog {
  const ctx: Context = { supportedFunctions: new Set(options.supportedFunctions ?? []), errors: [], warnings: [] };
  const compiler = new Compiler(ctx, undefined, undefined, options.inRepl ?? false);
  const bytecode = [BYTECODE_IDENTIFIER, BYTECODE_VERSION, ...compiler.visit(ast)];
  return { bytecode, errors: ctx.errors, warnings: ctx.warnings };
}

/** A Hog program's bytecode; a HogCompileError (message, offsets) if it does not parse or compile. */
export async function compileHog(source: string, options: CompileOptions = {}): Promise<CompiledHog> {
  return compileAst(await parseHog('program', source), options);
}

/** A HogQL expression's bytecode (filters, inputs), as PostHog's `to_bytecode`. */
export async function compileExpr(source: string, options: CompileOptions = {}): Promise<CompiledHog> {
  return compileAst(await parseHog('expr', source), options);
}

/**
 * A string input's bytecode: its text with `{expr}` parts, no quotes (PostHog's parse_string_template, which
 * hands the parser the text after an opening `F'`).
 */
export async function compileTemplate(source: string, options: CompileOptions = {}): Promise<CompiledHog> {
  return compileAst(await parseHog('template', `F'${source}`), options);
}
