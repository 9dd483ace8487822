// The contract's own hygiene, beyond what the linter checks.
import t from 'tap';
import { spec } from '../src/http/spec.js';
import { handlers } from '../src/operations/index.js';

const scopes = new Set((spec.components.schemas!.Scope as { enum: string[] }).enum);
const tags = new Set(((spec as { tags?: { name: string }[] }).tags ?? []).map((tag) => tag.name));
const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => ({ path, method, op: op as Record<string, any> })),
);

t.test('every operation has one declared tag, a summary and a handler', async (t) => {
  for (const { path, method, op } of operations) {
    const where = `${method.toUpperCase()} ${path}`;
    t.equal(op.tags?.length, 1, `${where} has exactly one tag`);
    t.ok(tags.has(op.tags?.[0]), `${where}: tag ${op.tags?.[0]} is declared`);
    t.ok(op.summary, `${where} has a summary`);
    t.equal(typeof handlers[op.operationId as keyof typeof handlers], 'function', `${op.operationId} has a handler`);
  }
  t.equal(Object.keys(handlers).length, operations.length, 'no handler without an operation');
});

t.test('secured operations name real scopes and document 401 and 403', async (t) => {
  for (const { op } of operations) {
    const security = (op.security ?? spec.security) as Record<string, string[]>[];
    if (!security.length) continue;
    const required = security[0]?.PersonalAPIKeyAuth ?? [];
    t.equal(required.length, 1, `${op.operationId} requires exactly one scope`);
    for (const scope of required) t.ok(scopes.has(scope), `${op.operationId}: ${scope} is a known scope`);
    t.ok(op.responses['401'] && op.responses['403'], `${op.operationId} documents 401 and 403`);
  }
});

t.test('request bodies hold no read-only fields', async (t) => {
  for (const { op } of operations) {
    const ref = op.requestBody?.content?.['application/json']?.schema?.$ref as string | undefined;
    if (!ref) continue;
    const schema = spec.components.schemas?.[ref.split('/').pop()!] as {
      properties?: Record<string, { readOnly?: boolean }>;
    };
    for (const [name, prop] of Object.entries(schema.properties ?? {})) {
      t.notOk(prop.readOnly, `${op.operationId}: ${name} is writable in its request schema`);
    }
  }
});
