// Requests a client generated from PostHog's current published schema can send, against our contract:
// for every operation both serve, each query parameter and top-level body field we declare must take
// every value PostHog's schema lets such a client send (its enum values, or any string where PostHog
// declares a plain string). A narrower contract would turn a working PostHog request into our 400.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { deref, operations, type Schema } from './helpers/spec-ops.js';

type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, any> };
const shape = (path: string) => path.replace(/\{[^}]+\}|@me/g, '{}');

function theirDeref(doc: Doc, node: any): Schema {
  for (let i = 0; node?.$ref && i < 50; i++) {
    node = String(node.$ref)
      .replace(/^#\//, '')
      .split('/')
      .reduce((acc: any, p) => acc?.[p], doc);
  }
  if (node?.allOf?.length === 1) return theirDeref(doc, node.allOf[0]);
  return node ?? {};
}

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

function compare(doc: Doc): string[] {
  const theirs = new Map<string, any>();
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item))
      if (op?.operationId) theirs.set(`${method.toUpperCase()} ${shape(path)}`, op);
  const found: string[] = [];
  for (const op of operations) {
    const their = theirs.get(`${op.method} ${shape(op.path)}`);
    if (!their) continue;
    for (const p of op.params.filter((x) => x.in === 'query')) {
      const tp = (their.parameters ?? []).map((x: any) => theirDeref(doc, x)).find((x: any) => x.name === p.name);
      const gap = tp && narrower(deref(p.schema), theirDeref(doc, tp.schema ?? {}));
      if (gap) found.push(`${op.operationId} ?${p.name}: PostHog also takes ${gap}`);
      const repeated = tp && theirDeref(doc, tp.schema ?? {}).type === 'array' && tp.explode !== false;
      if (repeated && !JSON_TEXT[p.name] && (p.json || deref(p.schema).type !== 'array'))
        found.push(`${op.operationId} ?${p.name}: PostHog's clients repeat it (an array); ours takes one value`);
    }
    const theirBody = theirDeref(doc, their.requestBody?.content?.['application/json']?.schema);
    for (const [name, ours] of Object.entries<Schema>(op.body?.properties ?? {})) {
      if (REFERENCES[name]) continue;
      const tf = theirBody.properties?.[name];
      const gap = tf && !theirDeref(doc, tf).readOnly && narrower(deref(ours), theirDeref(doc, tf));
      if (gap) found.push(`${op.operationId} body ${name}: PostHog also takes ${gap}`);
    }
  }
  return found;
}

const schemaPath = fileURLToPath(
  new URL('../../shared/reference/posthog-schema/posthog-current.json', import.meta.url),
);
if (!existsSync(schemaPath)) {
  t.pass('requests against PostHog’s schema', { skip: "PostHog's schema copy is absent: nothing to compare against" });
} else {
  const gaps = compare(JSON.parse(readFileSync(schemaPath, 'utf8')));
  t.same(gaps, [], 'every request value PostHog’s schema admits is one our contract admits');
}
