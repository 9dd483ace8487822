// The HogQL parser's thread (started by parse-thread.ts): PostHog's parser is WebAssembly that takes
// about 5 ms for a short SELECT and grows faster than the text (a 2 KB query of 100 ORs takes over
// 100 ms), so it runs here, away from the server's event loop. A parse that overflows the parser's
// stack traps; the instance is then replaced, since a trapped WebAssembly instance is not reused.
import { readlinkSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import createHogQLParser, { type HogQLParser } from '@posthog/hogql-parser';
import { convertExpr, convertOrder, convertQuery } from './convert.js';
import { QueryError } from './errors.js';

/** Hog's kinds (src/hog) answer the parser's JSON text as it is: the Hog compiler reads PostHog's own AST. */
export type HogParseKind = 'program' | 'hogExpr' | 'template';
export type ParseKind = 'select' | 'expr' | 'order' | HogParseKind;

export interface ParseRequest {
  id: number;
  kind: ParseKind;
  text: string;
}

export type ParseAnswer =
  | { id: number; ast: unknown }
  | { id: number; error: { message: string; start?: number; end?: number; syntax: boolean } };

let parser: Promise<HogQLParser> = createHogQLParser();

/** What PostHog's parser says a text holds, converted to the compiler's AST; a QueryError otherwise. */
export async function parseText(kind: ParseKind, text: string): Promise<unknown> {
  const p = await parser;
  let json: string;
  try {
    if (kind === 'select') json = p.parseSelect(text);
    else if (kind === 'expr' || kind === 'hogExpr') json = p.parseExpr(text);
    else if (kind === 'order') json = p.parseOrderExpr(text);
    else if (kind === 'program') json = p.parseProgram(text);
    else json = p.parseFullTemplateString(text);
  } catch {
    parser = createHogQLParser();
    throw new QueryError('Query is too complex to parse: simplify it');
  }
  const ast = JSON.parse(json);
  if (ast?.error) {
    const start = typeof ast.start?.offset === 'number' ? ast.start.offset : undefined;
    const end = typeof ast.end?.offset === 'number' ? ast.end.offset : undefined;
    const err = new QueryError(String(ast.message), start, end);
    if (ast.type === 'SyntaxError') err.syntax = true;
    else err.message = `${ast.message.replace(/^Unsupported: /, '')} is not supported`;
    throw err;
  }
  if (kind === 'select') return convertQuery(ast);
  if (kind === 'expr') return convertExpr(ast);
  return kind === 'order' ? convertOrder(ast) : json;
}

/** This thread's id where Linux says it (/proc/thread-self), so the server can read the CPU time a parse had. */
function threadId(): number | undefined {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop()) || undefined;
  } catch {
    return undefined;
  }
}

void parser.then(() => parentPort?.postMessage({ ready: true, tid: threadId() }));

parentPort?.on('message', async (req: ParseRequest) => {
  let answer: ParseAnswer;
  try {
    answer = { id: req.id, ast: await parseText(req.kind, req.text) };
  } catch (err) {
    const e = err instanceof QueryError ? err : new QueryError('Query could not be parsed');
    answer = { id: req.id, error: { message: e.message, start: e.start, end: e.end, syntax: e.syntax } };
  }
  parentPort!.postMessage(answer);
});
