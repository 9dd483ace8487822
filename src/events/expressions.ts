import type { SQL } from 'drizzle-orm';
import {
  compileCondition,
  compileJsonValue,
  eventsScope,
  HogQLError,
  parseCondition,
  parseExpr,
} from '../hogql/index.js';
import { ApiError } from '../core/errors.js';
import { rejectNulInJson } from '../core/null-characters.js';

/** A query parameter holding a JSON array of expression strings (`select`, `where`). */
function expressionList(attr: string, raw: string | undefined): string[] {
  if (raw === undefined || raw === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw ApiError.validation(attr, `${attr} must be a JSON array of expression strings.`);
  }
  if (!Array.isArray(parsed) || !parsed.every((e) => typeof e === 'string' && e.trim())) {
    throw ApiError.validation(attr, `${attr} must be a JSON array of expression strings.`);
  }
  if (parsed.length > 50) throw ApiError.validation(attr, `At most 50 expressions are supported in ${attr}.`);
  rejectNulInJson(attr, parsed);
  return parsed as string[];
}

function compile<T>(attr: string, text: string, build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof HogQLError) throw ApiError.validation(attr, `${err.message}: ${text}`);
    throw err;
  }
}

/** The listing's `where` conditions as SQL over the events table (shared with batch exports' HogQL). */
export function whereConditions(raw: string | undefined): SQL[] {
  return expressionList('where', raw).map((text) =>
    compile('where', text, () => compileCondition(parseCondition(text), eventsScope)),
  );
}

/** The listing's `select` expressions as JSON-valued SQL, in order; empty when absent. */
export function selectedValues(raw: string | undefined): { expressions: string[]; values: SQL[] } {
  const expressions = expressionList('select', raw);
  const values = expressions.map((text) =>
    compile('select', text, () => compileJsonValue(parseExpr(text), eventsScope)),
  );
  return { expressions, values };
}
