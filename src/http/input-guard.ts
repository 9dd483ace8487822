import type { FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.js';
import { NUL, nullCharacters } from '../core/null-characters.js';

/** Deeper JSON than this is refused: no field of the contract nests anywhere near it. */
export const MAX_JSON_DEPTH = 100;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * U+FFFD for unpaired surrogates, as a UTF-8 encoder writes them in text; PostgreSQL's jsonb refuses their `\\u`
 * escapes.
 */
function wellFormed(s: string): string {
  return LONE_SURROGATE.test(s) ? (s as string & { toWellFormed(): string }).toWellFormed() : s;
}

/**
 * What the schemas cannot say about input, checked before validation: PostgreSQL refuses NUL in
 * text (DRF answers "Null characters are not allowed."), jsonb refuses unpaired surrogates,
 * and serialising very deep documents exhausts the stack. Path values holding NUL name nothing (404).
 * Only the operation's own query parameters (`queryNames`) are checked.
 * A JSON operation sent no body at all sees `{}`, as DRF's `request.data` is then empty.
 */
export function guardInput(req: FastifyRequest, hasJsonBody: boolean, queryNames: ReadonlySet<string>): void {
  for (const value of Object.values((req.params ?? {}) as Record<string, unknown>)) {
    if (typeof value === 'string' && value.includes(NUL)) throw ApiError.notFound();
  }
  const query = (req.query ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(query)) {
    // Parameters the operation does not take are ignored, whatever they hold.
    if (!queryNames.has(name)) continue;
    if (typeof value === 'string') {
      if (value.includes(NUL)) throw nullCharacters(name);
      query[name] = wellFormed(value);
    } else if (Array.isArray(value)) {
      if (value.some((v) => typeof v === 'string' && v.includes(NUL))) throw nullCharacters(name);
      query[name] = value.map((v) => (typeof v === 'string' ? wellFormed(v) : v));
    }
  }
  if (hasJsonBody && req.body === undefined) {
    req.body = {};
    // Body validators are chosen by media type; without one the empty body would go unchecked.
    req.headers['content-type'] = 'application/json';
  }
  if (req.body !== undefined) req.body = cleanBody(req.body);
}

/** Walks the document without recursion (its depth is what is being checked). */
function cleanBody(body: unknown): unknown {
  if (typeof body === 'string') {
    if (body.includes(NUL)) throw nullCharacters(null);
    return wellFormed(body);
  }
  type Frame = { value: Record<string, unknown> | unknown[]; path: string[] };
  const stack: Frame[] = [];
  if (body && typeof body === 'object') stack.push({ value: body as Frame['value'], path: [] });
  while (stack.length) {
    const { value, path } = stack.pop()!;
    if (path.length >= MAX_JSON_DEPTH) {
      throw ApiError.validation(
        path.slice(0, 1).join('') || null,
        `Ensure this value is nested no more than ${MAX_JSON_DEPTH} levels deep.`,
      );
    }
    const entries: [string, unknown][] = Array.isArray(value)
      ? value.map((v, i) => [String(i), v])
      : Object.entries(value);
    for (const [key, child] of entries) {
      const childPath = [...path, key];
      const target = value as Record<string, unknown>;
      let slot = key;
      if (!Array.isArray(value) && (key.includes(NUL) || LONE_SURROGATE.test(key))) {
        if (key.includes(NUL)) throw nullCharacters(childPath.join('__'));
        delete target[key];
        slot = wellFormed(key);
        target[slot] = child;
      }
      if (typeof child === 'string') {
        if (child.includes(NUL)) throw nullCharacters(childPath.join('__'));
        if (LONE_SURROGATE.test(child)) target[slot] = wellFormed(child);
      } else if (child && typeof child === 'object') {
        stack.push({ value: child as Frame['value'], path: childPath });
      }
    }
  }
  return body;
}
