// The one HogQL front end: PostHog's own parser (@posthog/hogql-parser), on its own thread, with the
// answers kept by text so that a query asked again is not parsed again.
import { Lru } from '../core/lru.js';
import type { Node, Query } from './ast.js';
import { position, QueryError } from './errors.js';
import { parseOffThread } from './parse-thread.js';
import type { ParseKind } from './parse-worker.js';

/** Longer queries take the parser seconds (its time grows faster than the text); no hand-written query is this long. */
export const MAX_QUERY_LENGTH = 16_384;
/**
 * PostHog's parser takes time exponential in the nesting of parentheses (20 levels: about 100 ms, 64: seconds), so
 * deeper texts are refused before it sees them.
 */
export const MAX_NESTING = 20;
/** Parsed queries kept, least recently used dropped first. */
export const CACHE_ENTRIES = 1_000;

const cache = new Lru<string, unknown>(CACHE_ENTRIES);

/** How deep parentheses and brackets nest, outside quotes. */
function nesting(text: string): number {
  let depth = 0;
  let max = 0;
  let quote = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(' || c === '[') max = Math.max(max, ++depth);
    else if (c === ')' || c === ']') depth--;
  }
  return max;
}

/**
 * The server's own texts (an insight kind's query: a 30-step funnel is about 20,000 characters) are longer and
 * nest deeper than a person's, but hold what a caller gave (property filters, a paths expression, each checked
 * alone first), so they are bounded too.
 */
const OWN_LENGTH = 4 * MAX_QUERY_LENGTH;
const OWN_NESTING = MAX_NESTING + 10;

/** Parses a text once; the AST is shared by every caller and never changed by the compiler. */
async function parse(kind: ParseKind, text: string, own = false): Promise<unknown> {
  const key = `${kind}\0${text}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const [length, depth] = own ? [OWN_LENGTH, OWN_NESTING] : [MAX_QUERY_LENGTH, MAX_NESTING];
  if (text.includes('\0')) throw new QueryError('Query may not contain NUL characters');
  if (text.length > length) throw new QueryError(`Query is too long: at most ${length} characters`);
  if (nesting(text) > depth)
    throw new QueryError(`Query is nested too deeply (at most ${depth} levels of parentheses)`);
  try {
    const ast = await parseOffThread(kind, text, own);
    cache.set(key, ast);
    return ast;
  } catch (err) {
    if (err instanceof QueryError && err.syntax && err.start !== undefined) {
      const e = new QueryError(`Syntax error at ${position(text, err.start)}: ${err.message}`, err.start, err.end);
      e.syntax = true;
      throw e;
    }
    throw err;
  }
}

/** The query text as one SELECT (or a UNION of them), or a QueryError that says where it failed. */
export async function parseQuery(text: string): Promise<Query> {
  return (await parse('select', text)) as Query;
}

/** A query the server wrote itself (an insight kind's HogQL), held to the bounds of such texts (OWN_LENGTH). */
export async function parseOwnQuery(text: string): Promise<Query> {
  return (await parse('select', text, true)) as Query;
}

/** One expression, e.g. an EventsQuery `select` or `where` entry. */
export async function parseExpression(text: string): Promise<Node> {
  return (await parse('expr', text)) as Node;
}

/** One ORDER BY item: an expression with ASC or DESC. */
export async function parseOrder(text: string): Promise<{ expr: Node; desc: boolean }> {
  return (await parse('order', text)) as { expr: Node; desc: boolean };
}

/** How many parsed texts are kept (for tests and the bench). */
export const parsedCount = () => cache.size;
