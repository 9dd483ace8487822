import { ApiError } from '../../core/errors.js';

type Node =
  | { k: 'num'; v: number }
  | { k: 'ref'; i: number }
  | { k: 'neg'; a: Node }
  | { k: 'bin'; op: string; a: Node; b: Node };

const TOKEN = /\s*(?:(\d+(?:\.\d+)?|\.\d+)|([A-Za-z])|([-+*/()]))/y;

/**
 * A trends formula (`A + B`, `(A - B) / A * 100`): series by letter (A is the first), numbers,
 * `+ - * /`, parentheses, unary minus. Refused with a 400 naming `trendsFilter__formula` when it
 * does not parse or names a series that does not exist.
 */
export function parseFormula(text: string, seriesCount: number): Node {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  const trimmed = text.trim();
  const bad = (why: string) =>
    ApiError.validation('query__trendsFilter__formula', `Invalid formula "${text}": ${why}.`);
  while (TOKEN.lastIndex < trimmed.length) {
    const start = TOKEN.lastIndex;
    const m = TOKEN.exec(trimmed);
    if (!m || m.index !== start) throw bad(`unexpected "${trimmed.slice(start, start + 10)}"`);
    tokens.push((m[1] ?? m[2] ?? m[3])!);
  }
  let pos = 0;
  const peek = () => tokens[pos];
  const primary = (): Node => {
    const t = tokens[pos++];
    if (t === undefined) throw bad('it ends too early');
    if (t === '(') {
      const inner = sum();
      if (tokens[pos++] !== ')') throw bad('a parenthesis is not closed');
      return inner;
    }
    if (t === '-') return { k: 'neg', a: primary() };
    if (t === '+') return primary();
    if (/^[A-Za-z]$/.test(t)) {
      const i = t.toUpperCase().charCodeAt(0) - 65;
      if (i >= seriesCount) throw bad(`there is no series ${t.toUpperCase()}`);
      return { k: 'ref', i };
    }
    if (/^[\d.]/.test(t)) return { k: 'num', v: Number(t) };
    throw bad(`unexpected "${t}"`);
  };
  const product = (): Node => {
    let a = primary();
    while (peek() === '*' || peek() === '/') {
      const op = tokens[pos++]!;
      a = { k: 'bin', op, a, b: primary() };
    }
    return a;
  };
  const sum = (): Node => {
    let a = product();
    while (peek() === '+' || peek() === '-') {
      const op = tokens[pos++]!;
      a = { k: 'bin', op, a, b: product() };
    }
    return a;
  };
  if (!tokens.length) throw bad('it is empty');
  const node = sum();
  if (pos !== tokens.length) throw bad(`unexpected "${tokens[pos]}"`);
  return node;
}

/** Evaluates a formula point by point over the series' values; a division by zero is 0, as PostHog's. */
export function evaluateFormula(node: Node, series: number[][]): number[] {
  const length = Math.max(0, ...series.map((s) => s.length));
  const at = (n: Node, i: number): number => {
    switch (n.k) {
      case 'num':
        return n.v;
      case 'ref':
        return series[n.i]?.[i] ?? 0;
      case 'neg':
        return -at(n.a, i);
      case 'bin': {
        const a = at(n.a, i);
        const b = at(n.b, i);
        if (n.op === '+') return a + b;
        if (n.op === '-') return a - b;
        if (n.op === '*') return a * b;
        return b === 0 ? 0 : a / b;
      }
    }
  };
  return Array.from({ length }, (_, i) => at(node, i));
}

export type Formula = Node;
