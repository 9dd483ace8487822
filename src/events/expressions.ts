import type { SQL } from 'drizzle-orm';
import { compileExpression, parseExpression, QueryError, type Node } from '../hogql/index.js';
import { eventsTable, jsonValue, refuseAggregates } from '../hogql/embedded.js';
import { inZone, toBool } from '../hogql/types.js';
import { ApiError } from '../core/errors.js';
import { rejectNulInJson } from '../core/null-characters.js';

const MAX_EXPRESSIONS = 50;

/**
 * A query parameter holding expressions: repeated (`?select=event&select=timestamp`, as a client generated from
 * PostHog's schema sends it), or one JSON array of them (`?select=["event","timestamp"]`, as PostHog documents it).
 */
export function expressionList(attr: string, raw: string[] | undefined): string[] {
  let list: unknown[] = raw ?? [];
  if (list.length === 1 && String(list[0]).trimStart().startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(String(list[0]));
      if (Array.isArray(parsed)) list = parsed;
    } catch {
      // Not JSON: one expression that begins with an array literal.
    }
  }
  list = list.filter((e) => e !== '');
  if (!list.every((e) => typeof e === 'string' && e.trim()))
    throw ApiError.validation(attr, `${attr} must be HogQL expressions: repeated, or one JSON array of strings.`);
  if (list.length > MAX_EXPRESSIONS)
    throw ApiError.validation(attr, `At most ${MAX_EXPRESSIONS} expressions are supported in ${attr}.`);
  rejectNulInJson(attr, list);
  return list as string[];
}

/**
 * Which project the expressions read, in its timezone (where days begin, text without an offset is read and
 * date-times are written), and whether they read the event's person (then persons must be joined).
 */
export interface ExpressionContext {
  teamId: number;
  timezone: string;
  usePerson: () => void;
}

async function compile<T>(attr: string, text: string, build: (node: Node) => T): Promise<T> {
  try {
    const node = await parseExpression(text);
    refuseAggregates(node);
    return build(node);
  } catch (err) {
    if (err instanceof QueryError) throw ApiError.validation(attr, `${err.message}: ${text}`, err.code);
    throw err;
  }
}

/** The listing's `where` conditions as SQL over the events table. */
export function whereConditions(list: string[], ctx: ExpressionContext): Promise<SQL[]> {
  const table = eventsTable(ctx.usePerson);
  return Promise.all(
    list.map((text) => compile('where', text, (node) => toBool(compileExpression(node, table, ctx), node.pos).sql)),
  );
}

/** The listing's `select` expressions as JSON-valued SQL, in order, date-times written as the Query API's. */
export function selectedValues(list: string[], ctx: ExpressionContext): Promise<SQL[]> {
  const table = eventsTable(ctx.usePerson);
  return Promise.all(
    list.map((text) =>
      compile('select', text, (node) => jsonValue(node, inZone(compileExpression(node, table, ctx), ctx.timezone))),
    ),
  );
}
