// Spec-driven fuzzing: every operation of the contract gets requests generated from its own schemas,
// valid and broken. Whatever a client sends: no 5xx, every answer is the contract's for its status,
// and a refused request changes nothing in the database.
//
// Reproduce a run with FUZZ_SEED=<seed> (printed on failure, with the shrunk counterexample);
// FUZZ_RUNS sets the runs per operation (`make fuzz` runs the long profile). The operations are fuzzed by
// two test files, every other operation each, so that each stays well within the test timeout.
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import t from 'tap';
import { buildTestApp } from './app.js';
import {
  badPathValue,
  extremeDate,
  hugeString,
  jsonQueryValue,
  invalidArb,
  oddStrings,
  queryValueArb,
  toJsonText,
  validArb,
} from './arbitraries.js';
import { makeTenant } from './factories.js';
import { changedTables, fingerprint } from './fingerprint.js';
import { Fixtures } from './fixtures.js';
import { validateResponse } from './spec-validator.js';
import { fillPath, operations, pathParams, type Op } from './spec-ops.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
/** Runs per operation, at least six: the file's time grows with the contract (`make fuzz` runs the long profile). */
const RUNS = Number(process.env.FUZZ_RUNS ?? Math.max(6, Math.min(40, Math.floor(1200 / operations.length))));
const TIME_LIMIT_MS = Number(process.env.FUZZ_TIME_LIMIT_MS ?? Math.max(20_000, RUNS * 300));

/**
 * Operations left out, by name, with the reason. Paths of the ingestion endpoints (PostHog's capture
 * API) are matched by prefix, since they accept any event by design: a "refused request changes
 * nothing" property does not hold for an endpoint whose job is to store what it is sent.
 */
const SKIP_PATHS: [RegExp, string][] = [
  [
    /^\/(batch|capture|e|track|engage|s|i\/v0\/e)\//,
    'capture endpoint: stores whatever it is sent, fuzzed for shape by its own tests',
  ],
];
const SKIP_OPERATIONS: Record<string, string> = {};

const ctx = await buildTestApp(t);
const owner = await makeTenant(ctx.db);
const stranger = await makeTenant(ctx.db);
const fixtures = new Fixtures(ctx, owner);
const strangerFixtures = new Fixtures(ctx, stranger);

let lastError: Error | undefined;
ctx.app.addHook('onError', async (_req, _reply, err) => {
  lastError = err;
});

let known: Record<string, string> | undefined;
async function currentFingerprint(): Promise<Record<string, string>> {
  known ??= await fingerprint(ctx.db);
  return known;
}

type PathChoice = { kind: 'valid' | 'current' | 'foreign' } | { kind: 'literal' | 'raw'; value: string };
type BodyChoice =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  | { kind: 'raw'; payload: string; contentType: string };

interface FuzzRequest {
  auth: 'key' | 'none' | 'garbage' | 'query';
  path: Record<string, PathChoice>;
  query: Record<string, string | string[] | undefined>;
  body: BodyChoice;
}

function pathChoiceArb(op: Op, name: string): fc.Arbitrary<PathChoice> {
  const isTenant = op.tenant?.param === name;
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant({ kind: 'valid' as const }) },
    // `@current` on a delete of the tenant itself would remove the fuzzing tenant (and with it every later
    // request's ids).
    {
      weight: isTenant && !(op.tenant?.self && op.method === 'DELETE') ? 1 : 0,
      arbitrary: fc.constant({ kind: 'current' as const }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'foreign' as const }) },
    { weight: 2, arbitrary: badPathValue.map((value) => ({ kind: 'literal' as const, value })) },
    // Sent as they are, not percent-encoded: broken escapes and invalid UTF-8.
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('%', '%zz', '%E0%A4%A', '%C0%AF', '%ED%A0%80', '%00', '%FF%FE')
        .map((value) => ({ kind: 'raw' as const, value })),
    },
  );
}

const rawBodies = fc.oneof(
  fc
    .constantFrom('{"name": ', '{', 'nul', '[1,]', '{"a":1}{"b":2}', '\u0000', '"just a string"', '')
    .map((payload) => ({
      kind: 'raw' as const,
      payload,
      contentType: 'application/json',
    })),
  fc
    .constantFrom(
      'text/plain',
      'application/xml',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    )
    .map((contentType) => ({ kind: 'raw' as const, payload: 'name=x', contentType })),
  fc.constant({
    kind: 'raw' as const,
    payload: JSON.stringify({ name: 'x', pad: 'y'.repeat(1024 * 1024) }),
    contentType: 'application/json',
  }),
);

function requestArb(op: Op): fc.Arbitrary<FuzzRequest> {
  const queryParams = op.params.filter((p) => p.in === 'query');
  const query = fc
    .tuple(
      fc.record(Object.fromEntries(queryParams.map((p) => [p.name, queryValueArb(p.schema, p.json)])), {
        requiredKeys: [],
      }),
      fc.option(
        fc.tuple(fc.string({ minLength: 1, maxLength: 10 }), fc.oneof(fc.string({ maxLength: 10 }), oddStrings)),
        { freq: 4 },
      ),
    )
    .map(([known, extra]) => (extra && extra[0] !== 'personal_api_key' ? { ...known, [extra[0]]: extra[1] } : known));
  const body: fc.Arbitrary<BodyChoice> = op.body
    ? fc.oneof(
        { weight: 3, arbitrary: validArb(op.body).map((value) => ({ kind: 'json' as const, value })) },
        { weight: 6, arbitrary: invalidArb(op.body).map((value) => ({ kind: 'json' as const, value })) },
        {
          weight: 1,
          arbitrary: hugeString.map((value) => ({ kind: 'json' as const, value: { name: value, description: value } })),
        },
        { weight: 1, arbitrary: rawBodies },
        { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
      )
    : fc.oneof(
        { weight: 8, arbitrary: fc.constant({ kind: 'none' as const }) },
        // A body the operation does not take is ignored, whatever it holds.
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => ({ kind: 'json' as const, value })) },
      );
  return fc.record({
    auth: fc.oneof(
      { weight: 30, arbitrary: fc.constant('key' as const) },
      { weight: 1, arbitrary: fc.constantFrom('none' as const, 'garbage' as const, 'query' as const) },
    ),
    path: fc.record(Object.fromEntries(pathParams(op).map((name) => [name, pathChoiceArb(op, name)]))),
    query,
    body,
  });
}

async function resolvePath(op: Op, choices: Record<string, PathChoice>): Promise<Record<string, string | number>> {
  // Deletes get objects of their own, so that the tenant and the fuzzing key itself survive.
  const fresh = op.method === 'DELETE';
  const out: Record<string, string | number> = {};
  for (const [name, choice] of Object.entries(choices)) {
    if (choice.kind === 'literal' || choice.kind === 'raw') out[name] = choice.value;
    else if (choice.kind === 'current') out[name] = '@current';
    else if (choice.kind === 'foreign') out[name] = await strangerFixtures.valueFor(op, name, true);
    else out[name] = await fixtures.valueFor(op, name, fresh);
  }
  if (fixtures.made || strangerFixtures.made) {
    fixtures.made = strangerFixtures.made = 0;
    known = undefined;
  }
  return out;
}

function describe(inject: InjectOptions, res: { statusCode: number; body: string }): string {
  const payload = typeof inject.payload === 'string' ? inject.payload.slice(0, 300) : '';
  const request = `${inject.method} ${String(inject.url).slice(0, 300)} ${payload}`;
  return `${request}\n-> ${res.statusCode} ${res.body.slice(0, 400)}`;
}

const statuses = new Map<string, Map<number, number>>();
/** Requests with the tenant's key and ids of real objects, and how many of them were refused anyway. */
const reached = new Map<string, { total: number; refused: number }>();

async function send(op: Op, req: FuzzRequest): Promise<void> {
  const values = await resolvePath(op, req.path);
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(req.query)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) params.append(name, v);
  }
  const headers: Record<string, string> = {};
  if (req.auth === 'key') headers.authorization = `Bearer ${owner.key}`;
  if (req.auth === 'garbage') headers.authorization = 'Bearer phx_notakeyatall0000000000000000000000000';
  if (req.auth === 'query') params.append('personal_api_key', owner.key);
  const qs = params.toString();
  const raw = new Set(
    Object.entries(req.path)
      .filter(([, c]) => c.kind === 'raw')
      .map(([name]) => name),
  );
  const url = fillPath(op.path, values, raw) + (qs ? `?${qs}` : '');
  const inject: InjectOptions = { method: op.method as InjectOptions['method'], url, headers };
  if (req.body.kind === 'json') {
    inject.payload = toJsonText(req.body.value);
    headers['content-type'] = 'application/json';
  } else if (req.body.kind === 'raw') {
    inject.payload = req.body.payload;
    headers['content-type'] = req.body.contentType;
  }

  const before = await currentFingerprint();
  lastError = undefined;
  const res = await ctx.inject(inject);
  const seen = statuses.get(op.operationId) ?? new Map<number, number>();
  seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
  statuses.set(op.operationId, seen);
  // Public operations (capture, flags, remote config) take a project token, not the key, as their credential.
  const keyed = !(Array.isArray(op.raw.security) && op.raw.security.length === 0);
  const real =
    keyed &&
    req.auth === 'key' &&
    Object.entries(req.path).every(([name, c]) => c.kind === 'valid' && fixtures.isReal(values[name]!));
  if (real) {
    const r = reached.get(op.operationId) ?? { total: 0, refused: 0 };
    r.total++;
    if ([401, 403, 404].includes(res.statusCode)) r.refused++;
    reached.set(op.operationId, r);
  }

  if (res.statusCode >= 500) {
    throw new Error(
      `server error: ${describe(inject, res)}\n${(lastError as Error | undefined)?.stack?.slice(0, 1500) ?? ''}`,
    );
  }
  const problems = validateResponse(
    op.operationId,
    res.statusCode,
    res.headers['content-type'] as string | undefined,
    res.body,
  );
  if (problems.length) throw new Error(`contract violation: ${problems.join('; ')}\n${describe(inject, res)}`);
  if (res.statusCode >= 400) {
    known = undefined;
    const after = await currentFingerprint();
    const changed = changedTables(before, after);
    if (changed.length) throw new Error(`a refused request changed ${changed.join(', ')}: ${describe(inject, res)}`);
  } else if (op.method !== 'GET') {
    // A successful write may have changed or removed the objects that later path ids name.
    fixtures.forget();
    strangerFixtures.forget();
    known = undefined;
  }
}

/** A printable copy: long strings and deep nesting shortened, so a report never overflows. */
function preview(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return v.length > 120 ? `${v.slice(0, 60)}…(${v.length} chars)` : v;
  if (!v || typeof v !== 'object') return v;
  if (depth > 8) return `…(nested deeper)`;
  if (Array.isArray(v)) return v.slice(0, 10).map((x) => preview(x, depth + 1));
  return Object.fromEntries(
    Object.entries(v)
      .slice(0, 20)
      .map(([k, x]) => [k, preview(x, depth + 1)]),
  );
}

function seedFor(operationId: string): number {
  let h = SEED | 0;
  for (const c of operationId) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0;
  return h;
}

/**
 * Requests that reach the handler with one or two odd query values and nothing else wrong: JSON
 * parameters holding NUL (written `\u0000`) or numbers and dates no column holds, date parameters
 * far out of range. Mixed into the general requests above, these rarely get past the first
 * refused parameter, so the operations that take them get a property of their own.
 */
function oddQueryArb(op: Op): fc.Arbitrary<FuzzRequest> | undefined {
  const targets = op.params.filter(
    (p) => p.in === 'query' && (p.json || (p.schema.type === 'string' && !p.schema.enum && !p.schema.format)),
  );
  if (!targets.length || op.method !== 'GET') return undefined;
  return fc
    .subarray(targets, { minLength: 1, maxLength: Math.min(2, targets.length) })
    .chain((chosen) =>
      fc.record(
        Object.fromEntries(chosen.map((p) => [p.name, p.json ? jsonQueryValue : fc.oneof(extremeDate, oddStrings)])),
      ),
    )
    .map((query) => ({
      auth: 'key' as const,
      path: Object.fromEntries(pathParams(op).map((name) => [name, { kind: 'valid' as const }])),
      query,
      body: { kind: 'none' as const },
    }));
}

/** Fuzzes one half of the contract's operations: every other one, from the first (0) or the second (1). */
export function fuzzOperations(half: 0 | 1): void {
  const picked = operations.filter((_, i) => i % 2 === half);
  t.comment(`fuzz: seed ${SEED}, ${RUNS} runs per operation, ${picked.length} of ${operations.length} operations`);
  for (const op of picked) fuzzOperation(op);
}

function fuzzOperation(op: Op): void {
  const skipped = SKIP_OPERATIONS[op.operationId] ?? SKIP_PATHS.find(([re]) => re.test(op.path))?.[1];
  if (skipped) {
    t.test(op.operationId, { skip: skipped }, async () => {});
    return;
  }
  t.test(op.operationId, async (t) => {
    const seed = seedFor(op.operationId);
    const details = await fc.check(
      fc.asyncProperty(requestArb(op), (req) => send(op, req)),
      { seed, numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false },
    );
    if (details.failed) {
      const example = JSON.stringify(preview(details.counterexample?.[0]));
      const error =
        details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      t.fail(`${op.operationId}: ${error.slice(0, 3000)}`, {
        seed,
        path: details.counterexamplePath,
        counterexample: example?.slice(0, 2000),
        reproduce: `FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}`,
      });
    } else {
      t.pass(`${op.operationId}: ${details.numRuns} requests, no 5xx, all in the contract, refusals changed nothing`);
    }
    const odd = oddQueryArb(op);
    if (odd) {
      const oddDetails = await fc.check(
        fc.asyncProperty(odd, (req) => send(op, req)),
        { seed, numRuns: RUNS * 4, interruptAfterTimeLimit: TIME_LIMIT_MS, markInterruptAsFailure: false },
      );
      if (oddDetails.failed) {
        const error =
          oddDetails.errorInstance instanceof Error
            ? oddDetails.errorInstance.message
            : String(oddDetails.errorInstance);
        t.fail(`${op.operationId} (odd query values): ${error.slice(0, 3000)}`, {
          seed,
          counterexample: JSON.stringify(preview(oddDetails.counterexample?.[0]))?.slice(0, 2000),
          reproduce: `FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}`,
        });
      } else {
        t.pass(`${op.operationId}: ${oddDetails.numRuns} requests with odd query values, no 5xx`);
      }
    }
    // Guards the fuzzer itself: if the tenant or its objects were lost, every request would be a
    // 404 and the properties above would hold vacuously.
    const seen = JSON.stringify(Object.fromEntries(statuses.get(op.operationId) ?? new Map()));
    const r = reached.get(op.operationId) ?? { total: 0, refused: 0 };
    if (r.total >= 3) {
      t.ok(
        r.refused < r.total,
        `${op.operationId}: requests with real ids got past authentication and lookup (${seen})`,
      );
    } else {
      t.comment(`${op.operationId}: ${r.total} requests with real ids (no object to derive?) ${seen}`);
    }
  });
}
