// Reading PostHog's published schema beside ours: both resolved the same way, so the request and the
// response comparisons (posthog-schema-requests.test.ts, posthog-schema.test.ts) judge like with like.
import { deref, type Schema } from '../helpers/spec-ops.js';

export type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, any> };

/** A path template with its parameter names (and our literal `@me`) reduced to a placeholder. */
export const shape = (path: string) => path.replace(/\{[^}]+\}|@me/g, '{}');

/**
 * A schema with its `$ref`s followed and its `allOf` merged, keeping the wrapper's own keywords: one member is
 * taken whole; several (an object extending another) give the union of their properties and required fields.
 */
export function resolve(follow: (node: any) => any, node: any): Schema {
  let out = follow(node) ?? {};
  while (out.allOf?.length) {
    const { allOf, ...own } = out;
    const members: Schema[] = allOf.map((m: any) => resolve(follow, m));
    const merged: Schema = Object.assign({}, ...members);
    if (members.length > 1) {
      merged.properties = Object.assign({}, ...members.map((m) => m.properties ?? {}));
      merged.required = [...new Set(members.flatMap((m) => m.required ?? []))];
    }
    out = { ...merged, ...own };
  }
  return out;
}

export function theirDeref(doc: Doc, node: any): Schema {
  for (let i = 0; node?.$ref && i < 50; i++) {
    node = String(node.$ref)
      .replace(/^#\//, '')
      .split('/')
      .reduce((acc: any, p) => acc?.[p], doc);
  }
  return node ?? {};
}

export const ours = (node: any): Schema => resolve(deref, node);

export const typeOf = (s: Schema): string | undefined =>
  s.type ?? (s.properties ? 'object' : s.oneOf || s.anyOf ? 'union' : undefined);

export const nullable = (s: Schema) => s.nullable === true || (Array.isArray(s.enum) && s.enum.includes(null));

/** PostHog's operations by method and path shape, with their path items. */
export function theirOperations(doc: Doc): Map<string, { path: string; method: string; op: any; item: any }> {
  const found = new Map<string, { path: string; method: string; op: any; item: any }>();
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item))
      if (op?.operationId) found.set(`${method.toUpperCase()} ${shape(path)}`, { path, method, op, item });
  return found;
}

/**
 * Where an answer our schema allows is one PostHog's schema refuses, worded as ajv words the refusal of such
 * an answer (as the live comparison does, so PostHog's generator artifacts are listed once): a type PostHog
 * does not have (`/tags type must be array`), null where PostHog never has it, enum values it lacks, and
 * fields it requires that ours may leave out. `at` is the JSON pointer, list items as `*`.
 */
export function responseGaps(
  at: string,
  oursNode: any,
  theirsNode: any,
  theirs: (n: any) => Schema,
  depth = 0,
): string[] {
  const o = ours(oursNode);
  const t = theirs(theirsNode);
  const want = typeOf(t);
  const have = typeOf(o);
  if (!want || want === 'union' || have === 'union' || depth > 8) return [];
  const where = at || '/';
  const found: string[] = [];
  if (nullable(o) && !nullable(t)) found.push(`${where} type must be ${want}`);
  if (have && have !== want && !(have === 'integer' && want === 'number'))
    return [...found, `${where} type must be ${want}`];
  if (Array.isArray(t.enum) && Array.isArray(o.enum) && o.enum.some((v: unknown) => v !== null && !t.enum.includes(v)))
    found.push(`${where} enum must be equal to one of the allowed values`);
  if (want === 'object') {
    const required = new Set<string>(o.required ?? []);
    for (const key of t.required ?? [])
      if (!required.has(key) && !theirs(t.properties?.[key]).writeOnly) found.push(`${where} required ${key}`);
    for (const [key, their] of Object.entries<any>(t.properties ?? {}))
      if (o.properties?.[key]) found.push(...responseGaps(`${at}/${key}`, o.properties[key], their, theirs, depth + 1));
  }
  if (want === 'array' && o.items && t.items)
    found.push(...responseGaps(`${at}/*`, o.items, t.items, theirs, depth + 1));
  return found;
}
