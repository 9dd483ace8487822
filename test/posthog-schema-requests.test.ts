// Requests a client generated from PostHog's current published schema can send, against our contract: for
// every operation both serve, every query parameter PostHog declares must be one we declare, and each query
// parameter and body field must take every value PostHog's schema lets such a client send: its enum values
// (or any string where PostHog declares a plain string), its types, null where PostHog's field is nullable,
// lengths and bounds at least as wide, and no field required here that PostHog's client may leave out. A
// narrower contract would turn a working PostHog request into our 400. What PostHog's own code refuses too
// (its schema does not say so), and what we refuse on purpose, is listed with its reason in
// posthog-schema/request-differences.ts.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { deref, operations, type Schema } from './helpers/spec-ops.js';
import { type Doc, nullable, resolve, shape, theirDeref, theirOperations, typeOf } from './posthog-schema/compare.js';
import {
  REQUEST_ARTIFACTS,
  REQUEST_DEVIATIONS,
  requestDifference,
  type Difference,
} from './posthog-schema/request-differences.js';

/**
 * Fields whose PostHog schema reads wider than PostHog's behaviour: a reference must name an existing
 * object, so PostHog refuses the values we refuse too.
 */
const REFERENCES: Record<string, string> = {
  default_role_id: 'names a role; with no roles (none exist here) PostHog also takes only null',
};

/**
 * Query parameters PostHog's schema declares as arrays (a generated client repeats them) but PostHog reads as
 * one JSON text (`json.loads(request.GET[...])`): ours declare that JSON, as PostHog's server reads it.
 */
const JSON_TEXT: Record<string, string> = {
  properties: 'posthog/api/event.py parses it with json.loads',
};

/** The string values a schema admits: a list, or 'any' for any string, or undefined for no strings. */
function strings(schema: Schema): string[] | 'any' | undefined {
  if (Array.isArray(schema.enum)) return schema.enum.filter((v: unknown): v is string => typeof v === 'string');
  if (schema.type === 'string' && !schema.format && !schema.pattern) return 'any';
  return undefined;
}

/** Where ours refuses a value theirs admits (ours declares an enum; theirs is wider). */
function narrower(ours: Schema, theirs: Schema): string | undefined {
  const want = strings(theirs);
  const have = strings(ours);
  if (!want || have === 'any' || have === undefined) return undefined;
  if (want === 'any') return `any string (ours: ${have.join(', ')})`;
  const missing = want.filter((v) => !have.includes(v));
  return missing.length ? missing.join(', ') : undefined;
}

/** Whether a value of type `theirs` is one of `ours`'s (a number takes an integer; a union of objects is one). */
function takesType(ours: Schema, theirs: Schema, resolveTheirs: (n: any) => Schema): boolean {
  const want = typeOf(theirs);
  const have = typeOf(ours);
  if (!want || !have || want === have || (have === 'number' && want === 'integer')) return true;
  if (want === 'union')
    return (theirs.oneOf ?? theirs.anyOf).every((m: any) => takesType(ours, resolveTheirs(m), resolveTheirs));
  if (have === 'union') return (ours.oneOf ?? ours.anyOf).some((m: any) => takesType(deref(m), theirs, resolveTheirs));
  return false;
}

/** Bounds where ours is tighter than theirs. */
function tighter(ours: Schema, theirs: Schema): string[] {
  const found: string[] = [];
  for (const k of ['maxLength', 'maximum', 'maxItems'] as const)
    if (ours[k] !== undefined && !(theirs[k] !== undefined && theirs[k] <= ours[k]))
      found.push(`${k} ${ours[k]} (PostHog: ${theirs[k] ?? 'none'})`);
  for (const k of ['minLength', 'minimum', 'minItems'] as const)
    if (ours[k] !== undefined && ours[k] > 0 && !(theirs[k] !== undefined && theirs[k] >= ours[k]))
      found.push(`${k} ${ours[k]} (PostHog: ${theirs[k] ?? 'none'})`);
  if (ours.pattern && ours.pattern !== theirs.pattern) found.push(`pattern ${ours.pattern}`);
  return found;
}

/** What a body value PostHog's client may send at `at` finds refused by our schema there. */
function bodyGaps(at: string, oursRaw: any, theirsRaw: any, theirs: (n: any) => Schema, depth = 0): string[] {
  const o = resolve(deref, oursRaw);
  const t = theirs(theirsRaw);
  if (t.readOnly || depth > 5) return [];
  const name = at ? ` ${at}` : '';
  const found: string[] = [];
  const gap = narrower(o, t);
  if (gap) found.push(`body${name}: PostHog also takes ${gap}`);
  if (nullable(t) && !nullable(o)) found.push(`body${name}: null (PostHog takes it)`);
  if (!takesType(o, t, theirs)) found.push(`body${name}: type ${typeOf(o)} (PostHog: ${typeOf(t)})`);
  for (const bound of tighter(o, t)) found.push(`body${name}: ${bound}`);
  if (typeOf(o) === 'object' && typeOf(t) === 'object') {
    if (o.additionalProperties === false && t.additionalProperties !== false && !t.properties)
      found.push(`body${name}: closed (PostHog: any key)`);
    const theirProps: Record<string, any> = t.properties ?? {};
    const theirRequired = new Set<string>(t.required ?? []);
    for (const key of o.required ?? [])
      if (theirProps[key] && !theirRequired.has(key) && !theirs(theirProps[key]).readOnly)
        found.push(`body ${at ? `${at}.` : ''}${key}: required here only`);
    for (const [key, ours] of Object.entries<any>(o.properties ?? {})) {
      if (!theirProps[key] || REFERENCES[key]) continue;
      found.push(...bodyGaps(at ? `${at}.${key}` : key, ours, theirProps[key], theirs, depth + 1));
    }
  }
  if (typeOf(o) === 'array' && typeOf(t) === 'array' && o.items && t.items)
    found.push(...bodyGaps(at ? `${at}.*` : '*', o.items, t.items, theirs, depth + 1));
  return found;
}

function compare(doc: Doc): { found: string[]; used: Set<Difference> } {
  const theirs = theirOperations(doc);
  const resolveTheirs = (node: any) => resolve((n) => theirDeref(doc, n), node);
  const found: string[] = [];
  const used = new Set<Difference>();
  for (const op of operations) {
    if (op.path.startsWith('/api/environments/')) continue; // the twins take what their project operations take
    const match = theirs.get(`${op.method} ${shape(op.path)}`);
    if (!match) continue;
    const gaps: string[] = [];
    const theirParams = [...(match.item.parameters ?? []), ...(match.op.parameters ?? [])]
      .map((x: any) => theirDeref(doc, x))
      .filter((x: any) => x.in === 'query');
    const ours = op.params.filter((x) => x.in === 'query');
    for (const tp of theirParams)
      if (!ours.some((p) => p.name === tp.name)) gaps.push(`?${tp.name}: not declared (PostHog declares it)`);
    for (const p of ours) {
      const tp = theirParams.find((x: any) => x.name === p.name);
      if (!tp) continue;
      const mine = resolve(deref, p.schema);
      const their = resolveTheirs(tp.schema ?? {});
      const gap = narrower(mine, their);
      if (gap) gaps.push(`?${p.name}: PostHog also takes ${gap}`);
      const repeated = their.type === 'array' && tp.explode !== false;
      if (repeated && !JSON_TEXT[p.name] && (p.json || mine.type !== 'array'))
        gaps.push(`?${p.name}: PostHog's clients repeat it (an array); ours takes one value`);
      // A plain string parameter takes any text a client writes; otherwise the types must agree.
      if (!p.json && strings(mine) !== 'any' && !takesType(mine, their, resolveTheirs))
        gaps.push(`?${p.name}: type ${typeOf(mine)} (PostHog: ${typeOf(their)})`);
      if (!p.json) for (const bound of tighter(mine, their)) gaps.push(`?${p.name}: ${bound}`);
      if (p.required && !tp.required) gaps.push(`?${p.name}: required here only`);
    }
    const theirBody = match.op.requestBody?.content?.['application/json']?.schema;
    if (op.body && theirBody) gaps.push(...bodyGaps('', op.body, theirBody, resolveTheirs));
    for (const gap of gaps) {
      const allowed = requestDifference(op.operationId, gap);
      if (allowed) used.add(allowed);
      else found.push(`${op.operationId} ${gap}`);
    }
  }
  return { found, used };
}

const schemaPath = fileURLToPath(
  new URL('../../shared/reference/posthog-schema/posthog-current.json', import.meta.url),
);
if (!existsSync(schemaPath)) {
  t.pass('requests against PostHog’s schema', { skip: "PostHog's schema copy is absent: nothing to compare against" });
} else {
  const { found, used } = compare(JSON.parse(readFileSync(schemaPath, 'utf8')));
  t.same(found, [], 'every request PostHog’s schema admits is one our contract admits, or a listed difference');
  const stale = [...REQUEST_ARTIFACTS, ...REQUEST_DEVIATIONS].filter((d) => !used.has(d)).map((d) => d.reason);
  t.same(stale, [], 'every listed difference is still one (a fixed one leaves the list)');
}
