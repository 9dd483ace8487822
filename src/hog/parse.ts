// Hog programs and HogQL expressions parsed by PostHog's own parser (WebAssembly), giving its JSON AST.
import { QueryError } from '../hogql/errors.js';
import { parseOffThread } from '../hogql/parse-thread.js';
import type { HogParseKind } from '../hogql/parse-worker.js';
import { HogCompileError } from './errors.js';

/** A node of the parser's JSON AST; `node` names its kind. */
export interface AstNode {
  node: string;
  start?: { offset: number };
  end?: { offset: number };
  [key: string]: unknown;
}

/** A float constant: JSON would make `1.0` the integer 1, yet PostHog's bytecode tells FLOAT from INTEGER. */
export interface FloatValue {
  $float: number;
}

export function isFloat(value: unknown): value is FloatValue {
  return typeof value === 'object' && value !== null && '$float' in value;
}

/** Longest source accepted: the parser's time and stack grow faster than the text. */
export const MAX_SOURCE_LENGTH = 100_000;

/**
 * Numbers written with a fraction or an exponent become `{"$float": n}` before JSON.parse, since the text is
 * the only place where `1.0` and `1` still differ.
 */
export function markFloats(json: string): string {
  let out = '';
  let last = 0;
  let i = 0;
  while (i < json.length) {
    const c = json.charCodeAt(i);
    if (c === 34 /* " */) {
      i++;
      while (i < json.length && json.charCodeAt(i) !== 34) i += json.charCodeAt(i) === 92 /* \ */ ? 2 : 1;
      i++;
      continue;
    }
    if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      let j = i + 1;
      let float = false;
      while (j < json.length && /[0-9.eE+-]/.test(json[j]!)) {
        if (!/[0-9-]/.test(json[j]!)) float = true;
        j++;
      }
      if (float) {
        out += `${json.slice(last, i)}{"$float":${json.slice(i, j)}}`;
        last = j;
      }
      i = j;
      continue;
    }
    i++;
  }
  return out + json.slice(last);
}

export type ParseKind = 'program' | 'expr' | 'template';

const THREAD_KIND: Record<ParseKind, HogParseKind> = { program: 'program', expr: 'hogExpr', template: 'template' };

/**
 * The AST of a text, or a HogCompileError with the parser's message and position. The parse runs on the HogQL
 * parser's thread: a Hog program of a few hundred lines takes PostHog's parser far longer than a query does.
 */
export async function parseHog(kind: ParseKind, text: string): Promise<AstNode> {
  if (text.length > MAX_SOURCE_LENGTH) {
    throw new HogCompileError(`Hog code is longer than ${MAX_SOURCE_LENGTH} characters`);
  }
  let json: unknown;
  try {
    json = await parseOffThread(THREAD_KIND[kind], text);
  } catch (err) {
    if (!(err instanceof QueryError)) throw err;
    throw new HogCompileError(err.message.replace(/^Query/, 'Hog code'), err.start, err.end);
  }
  return JSON.parse(markFloats(json as string)) as AstNode;
}
