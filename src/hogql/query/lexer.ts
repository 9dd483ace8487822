import { QueryError, position } from './errors.js';

export type TokenKind = 'ident' | 'quoted' | 'number' | 'string' | 'op' | 'placeholder' | 'eof';

export interface Token {
  kind: TokenKind;
  value: string;
  start: number;
  end: number;
}

const OPS = [
  '<=',
  '>=',
  '!=',
  '<>',
  '==',
  '||',
  '=',
  '<',
  '>',
  '+',
  '-',
  '*',
  '/',
  '%',
  '(',
  ')',
  ',',
  '.',
  '[',
  ']',
  ';',
];
const IDENT = /[A-Za-z_$][\w$]*/y;
const NUMBER = /(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?/y;
const PLACEHOLDER = /\{\s*([A-Za-z_][\w]*)\s*\}/y;
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '0': '\0' };

function fail(text: string, at: number, what: string): never {
  throw new QueryError(`Syntax error at ${position(text, at)}: ${what}`, at, at + 1);
}

/** A quoted string or identifier: `''` or a backslash escapes the quote. */
function quoted(text: string, start: number, quote: string): { value: string; end: number } {
  let out = '';
  let i = start + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      const n = text[i + 1]!;
      out += ESCAPES[n] ?? n;
      i += 2;
    } else if (c === quote) {
      if (text[i + 1] === quote) {
        out += quote;
        i += 2;
      } else return { value: out, end: i + 1 };
    } else {
      out += c;
      i++;
    }
  }
  return fail(text, start, 'unterminated quote');
}

export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (text.startsWith('--', i)) {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl + 1;
      continue;
    }
    if (text.startsWith('/*', i)) {
      const close = text.indexOf('*/', i + 2);
      if (close < 0) fail(text, i, 'unterminated comment');
      i = close + 2;
      continue;
    }
    const start = i;
    if (c === "'") {
      const q = quoted(text, i, "'");
      tokens.push({ kind: 'string', value: q.value, start, end: q.end });
      i = q.end;
      continue;
    }
    if (c === '"' || c === '`') {
      const q = quoted(text, i, c);
      if (!q.value) fail(text, i, 'empty identifier');
      tokens.push({ kind: 'quoted', value: q.value, start, end: q.end });
      i = q.end;
      continue;
    }
    if (c === '{') {
      PLACEHOLDER.lastIndex = i;
      const m = PLACEHOLDER.exec(text);
      if (!m) fail(text, i, 'a placeholder is {name}');
      tokens.push({ kind: 'placeholder', value: m[1]!, start, end: i + m[0].length });
      i += m[0].length;
      continue;
    }
    NUMBER.lastIndex = i;
    const num = /[\d.]/.test(c) ? NUMBER.exec(text) : null;
    if (num) {
      tokens.push({ kind: 'number', value: num[0], start, end: i + num[0].length });
      i += num[0].length;
      continue;
    }
    IDENT.lastIndex = i;
    const id = IDENT.exec(text);
    if (id) {
      tokens.push({ kind: 'ident', value: id[0], start, end: i + id[0].length });
      i += id[0].length;
      continue;
    }
    const op = OPS.find((o) => text.startsWith(o, i));
    if (!op) fail(text, i, `unexpected character ${JSON.stringify(c)}`);
    tokens.push({ kind: 'op', value: op, start, end: i + op.length });
    i += op.length;
  }
  tokens.push({ kind: 'eof', value: '', start: text.length, end: text.length });
  return tokens;
}
