import type { Column, FromItem, Join, Node, Select } from './ast.js';
import { QueryError, position } from './errors.js';
import { tokenize, type Token } from './lexer.js';

/** Words that end an expression, so they cannot be a column's or table's alias without AS. */
const RESERVED = new Set(
  (
    'select from where group by having order limit offset join inner left right full outer cross on as and or not ' +
    'in is like ilike between asc desc union case when then else end distinct interval null true false with using ' +
    'all any array'
  ).split(' '),
);
export const INTERVAL_UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'] as const;
/** Deep nesting would exhaust the stack of the parser or of PostgreSQL's; no real query nests this far. */
const MAX_DEPTH = 64;

class Parser {
  private i = 0;
  private depth = 0;
  constructor(
    private text: string,
    private tokens: Token[],
  ) {}

  private get tok(): Token {
    return this.tokens[this.i]!;
  }
  private peek(n = 1): Token {
    return this.tokens[Math.min(this.i + n, this.tokens.length - 1)]!;
  }
  private word(t: Token = this.tok): string {
    return t.kind === 'ident' ? t.value.toLowerCase() : '';
  }
  private isWord(...words: string[]): boolean {
    return words.includes(this.word());
  }
  private isOp(op: string): boolean {
    return this.tok.kind === 'op' && this.tok.value === op;
  }
  private fail(what: string, t: Token = this.tok): never {
    const got = t.kind === 'eof' ? 'end of input' : JSON.stringify(this.text.slice(t.start, t.end));
    throw new QueryError(`Syntax error at ${position(this.text, t.start)}: ${what}, got ${got}`, t.start, t.end);
  }
  private expectWord(w: string): void {
    if (!this.isWord(w)) this.fail(`expected ${w.toUpperCase()}`);
    this.i++;
  }
  private expectOp(op: string): void {
    if (!this.isOp(op)) this.fail(`expected "${op}"`);
    this.i++;
  }
  private acceptWord(w: string): boolean {
    if (!this.isWord(w)) return false;
    this.i++;
    return true;
  }
  private acceptOp(op: string): boolean {
    if (!this.isOp(op)) return false;
    this.i++;
    return true;
  }
  private nest<T>(fn: () => T): T {
    if (++this.depth > MAX_DEPTH)
      throw new QueryError(`Query is nested too deeply (at most ${MAX_DEPTH} levels)`, this.tok.start);
    try {
      return fn();
    } finally {
      this.depth--;
    }
  }

  statement(): Select {
    const q = this.select();
    this.acceptOp(';');
    if (this.isWord('union')) throw new QueryError('UNION is not supported', this.tok.start, this.tok.end);
    if (this.tok.kind !== 'eof') this.fail('expected end of query');
    return q;
  }

  select(): Select {
    return this.nest(() => {
      if (this.isWord('with'))
        throw new QueryError('WITH (CTEs) is not supported; use a subquery in FROM', this.tok.start);
      this.expectWord('select');
      const distinct = this.acceptWord('distinct');
      const columns: Column[] = [];
      do columns.push(this.column());
      while (this.acceptOp(','));
      const q: Select = {
        distinct,
        columns,
        from: null,
        joins: [],
        where: null,
        groupBy: [],
        having: null,
        orderBy: [],
        limit: null,
        offset: null,
      };
      if (this.acceptWord('from')) {
        q.from = this.fromItem();
        for (;;) {
          if (this.acceptOp(',')) {
            q.joins.push({ type: 'CROSS', item: this.fromItem(), on: null });
            continue;
          }
          const type = this.joinType();
          if (!type) break;
          const item = this.fromItem();
          let on: Node | null = null;
          if (type !== 'CROSS') {
            if (this.isWord('using')) throw new QueryError('JOIN ... USING is not supported; use ON', this.tok.start);
            this.expectWord('on');
            on = this.expr();
          }
          q.joins.push({ type, item, on });
        }
      }
      if (this.acceptWord('where')) q.where = this.expr();
      if (this.acceptWord('group')) {
        this.expectWord('by');
        do q.groupBy.push(this.expr());
        while (this.acceptOp(','));
      }
      if (this.acceptWord('having')) q.having = this.expr();
      if (this.acceptWord('order')) {
        this.expectWord('by');
        do {
          const expr = this.expr();
          const desc = this.acceptWord('desc') ? true : (this.acceptWord('asc'), false);
          q.orderBy.push({ expr, desc });
        } while (this.acceptOp(','));
      }
      if (this.acceptWord('limit')) {
        q.limit = this.expr();
        if (this.acceptOp(',')) {
          // LIMIT offset, count
          q.offset = q.limit;
          q.limit = this.expr();
        }
        if (this.isWord('by')) throw new QueryError('LIMIT BY is not supported', this.tok.start);
      }
      if (this.acceptWord('offset')) q.offset = this.expr();
      return q;
    });
  }

  private joinType(): Join['type'] | null {
    const w = this.word();
    if (w === 'join') {
      this.i++;
      return 'INNER';
    }
    const kinds: Record<string, Join['type']> = {
      inner: 'INNER',
      left: 'LEFT',
      right: 'RIGHT',
      full: 'FULL',
      cross: 'CROSS',
    };
    const type = kinds[w];
    if (!type) return null;
    this.i++;
    this.acceptWord('outer');
    this.expectWord('join');
    return type;
  }

  private fromItem(): FromItem {
    const t = this.tok;
    let item: FromItem;
    if (this.acceptOp('(')) {
      item = { k: 'subquery', query: this.select(), alias: null, pos: t.start };
      this.expectOp(')');
    } else {
      if (t.kind !== 'ident' && t.kind !== 'quoted') this.fail('expected a table name');
      if (t.kind === 'ident' && RESERVED.has(this.word(t))) this.fail('expected a table name');
      this.i++;
      item = { k: 'table', name: t.value, alias: null, pos: t.start };
      if (this.isOp('(')) throw new QueryError(`Table functions are not supported: ${t.value}()`, t.start, t.end);
    }
    item.alias = this.alias();
    return item;
  }

  private alias(): string | null {
    if (this.acceptWord('as')) {
      const t = this.tok;
      if (t.kind !== 'ident' && t.kind !== 'quoted') this.fail('expected an alias');
      this.i++;
      return t.value;
    }
    const t = this.tok;
    if (t.kind === 'quoted' || (t.kind === 'ident' && !RESERVED.has(this.word(t)))) {
      this.i++;
      return t.value;
    }
    return null;
  }

  private column(): Column {
    const t = this.tok;
    if (this.isOp('*')) {
      this.i++;
      return { expr: { k: 'star', table: null, pos: t.start }, alias: null };
    }
    if (
      (t.kind === 'ident' || t.kind === 'quoted') &&
      this.peek().value === '.' &&
      this.peek(2).value === '*' &&
      this.peek(2).kind === 'op'
    ) {
      this.i += 3;
      return { expr: { k: 'star', table: t.value, pos: t.start }, alias: null };
    }
    const expr = this.expr();
    return { expr, alias: this.alias() };
  }

  expr(): Node {
    return this.nest(() => this.or());
  }

  /** One expression and nothing after it. */
  lone(): Node {
    const e = this.expr();
    if (this.tok.kind !== 'eof') this.fail('expected end of expression');
    return e;
  }

  private or(): Node {
    const pos = this.tok.start;
    const args = [this.and()];
    while (this.acceptWord('or')) args.push(this.and());
    return args.length === 1 ? args[0]! : { k: 'or', args, pos };
  }

  private and(): Node {
    const pos = this.tok.start;
    const args = [this.not()];
    while (this.acceptWord('and')) args.push(this.not());
    return args.length === 1 ? args[0]! : { k: 'and', args, pos };
  }

  private not(): Node {
    const pos = this.tok.start;
    if (this.acceptWord('not')) return this.nest(() => ({ k: 'not', arg: this.not(), pos }));
    return this.comparison();
  }

  private comparison(): Node {
    const left = this.additive();
    const pos = this.tok.start;
    const t = this.tok;
    if (t.kind === 'op' && ['=', '==', '!=', '<>', '<', '<=', '>', '>='].includes(t.value)) {
      this.i++;
      const op = t.value === '==' ? '=' : t.value === '<>' ? '!=' : t.value;
      return { k: 'binop', op, left, right: this.additive(), pos };
    }
    if (this.acceptWord('is')) {
      const negated = this.acceptWord('not');
      this.expectWord('null');
      return { k: 'isnull', arg: left, negated, pos };
    }
    const negated = this.isWord('not') && ['like', 'ilike', 'in', 'between'].includes(this.word(this.peek()));
    if (negated) this.i++;
    if (this.isWord('like', 'ilike')) {
      const op = `${negated ? 'NOT ' : ''}${this.word().toUpperCase()}`;
      this.i++;
      return { k: 'binop', op, left, right: this.additive(), pos };
    }
    if (this.acceptWord('between')) {
      const low = this.additive();
      this.expectWord('and');
      return { k: 'between', arg: left, low, high: this.additive(), negated, pos };
    }
    if (this.acceptWord('in')) {
      if (this.tok.kind === 'placeholder') {
        const p = this.tok;
        this.i++;
        return { k: 'in', left, list: [{ k: 'placeholder', name: p.value, pos: p.start }], sub: null, negated, pos };
      }
      this.expectOp('(');
      if (this.isWord('select')) {
        const sub = this.select();
        this.expectOp(')');
        return { k: 'in', left, list: null, sub, negated, pos };
      }
      const list: Node[] = [];
      do list.push(this.expr());
      while (this.acceptOp(','));
      this.expectOp(')');
      return { k: 'in', left, list, sub: null, negated, pos };
    }
    return left;
  }

  private additive(): Node {
    let left = this.multiplicative();
    for (;;) {
      const t = this.tok;
      if (t.kind !== 'op' || !['+', '-', '||'].includes(t.value)) return left;
      this.i++;
      left = { k: 'binop', op: t.value, left, right: this.multiplicative(), pos: t.start };
    }
  }

  private multiplicative(): Node {
    let left = this.unary();
    for (;;) {
      const t = this.tok;
      if (t.kind !== 'op' || !['*', '/', '%'].includes(t.value)) return left;
      this.i++;
      left = { k: 'binop', op: t.value, left, right: this.unary(), pos: t.start };
    }
  }

  private unary(): Node {
    const t = this.tok;
    if (this.acceptOp('-')) {
      return this.nest((): Node => {
        const arg = this.unary();
        if (arg.k === 'const' && typeof arg.value === 'number') return { k: 'const', value: -arg.value, pos: t.start };
        return { k: 'neg', arg, pos: t.start };
      });
    }
    if (this.acceptOp('+')) return this.unary();
    return this.postfix(this.primary());
  }

  /** `properties.$browser`, `properties['key with spaces']`, `person.properties.email`. */
  private postfix(node: Node): Node {
    for (;;) {
      if (this.isOp('.') && node.k === 'field') {
        this.i++;
        const t = this.tok;
        if (t.kind === 'ident' || t.kind === 'quoted') node = { ...node, chain: [...node.chain, t.value] };
        else if (t.kind === 'number' && /^\d+$/.test(t.value)) node = { ...node, chain: [...node.chain, t.value] };
        else this.fail('expected a field name');
        this.i++;
      } else if (this.isOp('[') && node.k === 'field') {
        this.i++;
        const t = this.tok;
        if (t.kind !== 'string' && !(t.kind === 'number' && /^\d+$/.test(t.value))) this.fail('expected a string key');
        this.i++;
        this.expectOp(']');
        node = { ...node, chain: [...node.chain, t.value] };
      } else return node;
    }
  }

  private primary(): Node {
    const t = this.tok;
    const pos = t.start;
    switch (t.kind) {
      case 'number': {
        this.i++;
        const value = Number(t.value);
        if (!Number.isFinite(value)) throw new QueryError(`Number out of range: ${t.value}`, t.start, t.end);
        return { k: 'const', value, pos };
      }
      case 'string':
        this.i++;
        return { k: 'const', value: t.value, pos };
      case 'placeholder':
        this.i++;
        return { k: 'placeholder', name: t.value, pos };
      case 'quoted':
        this.i++;
        return { k: 'field', chain: [t.value], pos };
      case 'op':
        if (this.acceptOp('(')) {
          if (this.isWord('select'))
            throw new QueryError('Subqueries are supported in FROM and IN only', this.tok.start);
          const inner = this.expr();
          this.expectOp(')');
          return inner;
        }
        return this.fail('expected an expression');
      case 'ident':
        return this.identifier();
      default:
        return this.fail('expected an expression');
    }
  }

  private identifier(): Node {
    const t = this.tok;
    const pos = t.start;
    const w = this.word();
    if (w === 'null' || w === 'true' || w === 'false') {
      this.i++;
      return { k: 'const', value: w === 'null' ? null : w === 'true', pos };
    }
    if (w === 'interval') {
      this.i++;
      const value = this.unary();
      const unit = this.word().replace(/s$/, '');
      if (!(INTERVAL_UNITS as readonly string[]).includes(unit))
        this.fail(`expected an interval unit (${INTERVAL_UNITS.join(', ')})`);
      this.i++;
      return { k: 'interval', value, unit: unit.toUpperCase(), pos };
    }
    if (w === 'case') {
      this.i++;
      const subject = this.isWord('when') ? null : this.expr();
      const branches: [Node, Node][] = [];
      while (this.acceptWord('when')) {
        const when = this.expr();
        this.expectWord('then');
        branches.push([
          subject ? { k: 'binop', op: '=', left: subject, right: when, pos: when.pos } : when,
          this.expr(),
        ]);
      }
      if (!branches.length) this.fail('expected WHEN');
      const otherwise = this.acceptWord('else') ? this.expr() : null;
      this.expectWord('end');
      return { k: 'case', branches, otherwise, pos };
    }
    if (RESERVED.has(w)) this.fail('expected an expression');
    this.i++;
    if (!this.isOp('(')) return { k: 'field', chain: [t.value], pos };
    this.i++;
    const call: Extract<Node, { k: 'call' }> = {
      k: 'call',
      name: t.value,
      args: [],
      distinct: false,
      star: false,
      pos,
    };
    if (this.isOp('*')) {
      this.i++;
      call.star = true;
    } else if (!this.isOp(')')) {
      call.distinct = this.acceptWord('distinct');
      do call.args.push(this.expr());
      while (this.acceptOp(','));
    }
    this.expectOp(')');
    if (this.isOp('('))
      throw new QueryError(`Parametric functions are not supported: ${t.value}(...)(...)`, t.start, t.end);
    if (this.isWord('over')) throw new QueryError('Window functions are not supported', this.tok.start, this.tok.end);
    return call;
  }
}

/** Each token can become a bound parameter, and a statement holds at most 65,535 of them. */
const MAX_TOKENS = 20_000;

function limited(tokens: Token[]): Token[] {
  if (tokens.length > MAX_TOKENS) throw new QueryError(`Query is too long: at most ${MAX_TOKENS} tokens`);
  return tokens;
}

/** The query text as one SELECT, or a QueryError that says where it failed. */
export function parseQuery(text: string): Select {
  if (text.includes('\0')) throw new QueryError('Query may not contain NUL characters');
  return new Parser(text, limited(tokenize(text))).statement();
}

/** One expression, e.g. an EventsQuery `select` or `where` entry. */
export function parseExpression(text: string): Node {
  if (text.includes('\0')) throw new QueryError('Expression may not contain NUL characters');
  return new Parser(text, limited(tokenize(text))).lone();
}
