import { Ajv, type Options } from 'ajv';
import formats from 'ajv-formats';
import fastJsonStringify from 'fast-json-stringify';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { authenticate } from './auth.js';
import { ApiError } from '../core/errors.js';
import { guardInput } from './input-guard.js';
import { isRenderer, renderAnswer, rendererMediaType, type Renderer } from './renderers.js';
import { routeMeta } from './route-meta.js';
import { spec, type Spec, type SpecOperation } from './spec.js';

const ajvOptions: Options = {
  useDefaults: true,
  // verbose keeps the failing schema and value on each error, for PostHog-worded messages.
  verbose: true,
  allErrors: false,
  strictTypes: false,
  keywords: ['example', 'x-error-detail'],
};

function makeAjv(coerceTypes: Options['coerceTypes']): Ajv {
  const ajv = new Ajv({ ...ajvOptions, coerceTypes });
  formats.default(ajv);
  return ajv;
}

/**
 * One function per distinct schema, compiled when it is first called. fastify-openapi-glue hands every
 * route its own deep copy of its schemas (the shared error responses, the environments twins of the
 * project routes), and Ajv and fast-json-stringify cache by object identity, so without this each copy was
 * compiled again: hundreds of identical generated functions, their source text and the schema copies they
 * keep, held for the process's life. A schema's JSON is its identity here; the compiled functions keep no
 * per-route state. Compiling on first use makes an app ready in a fraction of the time (most processes,
 * a worker or one test file, call few of the contract's operations); the first call of an operation pays
 * a few milliseconds instead.
 */
function sharedBy<F extends (...args: never[]) => unknown>(
  compile: (schema: object) => F,
): ((schema: object) => F) & { count(): number; compileAll(): void } {
  const shared = new Map<string, F>();
  const pending = new Set<() => void>();
  const get = (schema: object): F => {
    const key = JSON.stringify(schema);
    let fn = shared.get(key);
    if (!fn) {
      let compiled: F | undefined;
      const compileNow = (): F => {
        pending.delete(compileNow);
        compiled ??= compile(schema);
        return compiled;
      };
      pending.add(compileNow);
      const lazy = function (this: unknown, ...args: Parameters<F>) {
        compiled ??= compileNow();
        const result = compiled.apply(this, args);
        // Ajv reports a failure's details on the function itself.
        (lazy as unknown as { errors: unknown }).errors = (compiled as unknown as { errors: unknown }).errors;
        return result;
      };
      // Fastify hands an Ajv validator (one with a schemaEnv) the request as parent data, so that coercing
      // a whole part (a query string's array) can replace it.
      (lazy as unknown as { schemaEnv: boolean }).schemaEnv = true;
      fn = lazy as unknown as F;
      shared.set(key, fn);
    }
    return fn;
  };
  const compileAll = (): void => {
    for (const compileNow of [...pending]) compileNow();
  };
  return Object.assign(get, { count: () => shared.size, compileAll });
}

interface CompiledSchemas {
  counts(): { validators: number; serializers: number };
  compileAll(): void;
}

const compiledSchemas = new WeakMap<FastifyInstance, CompiledSchemas>();

/** How many validators and serializers an app holds (one per distinct schema), for the tests. */
export function compiledSchemaCounts(app: FastifyInstance): { validators: number; serializers: number } | undefined {
  return compiledSchemas.get(app)?.counts();
}

/** Compiles every schema not yet called (the tests check that each of the contract's compiles). */
export function compileAllSchemas(app: FastifyInstance): void {
  compiledSchemas.get(app)?.compileAll();
}

type QueryParam = { $ref?: string; in?: string; name?: string; 'x-renderer'?: unknown };

/**
 * The renderer an operation's `format` parameter names (`x-renderer`), besides JSON. Every success that
 * answers JSON must also declare the renderer's media type, or the contract would not say what it sends.
 */
function rendererOf(operationId: string, operation: SpecOperation, params: QueryParam[]): Renderer | undefined {
  const named = params.find((p) => p.name === 'format')?.['x-renderer'];
  if (named === undefined) return undefined;
  if (!isRenderer(named)) throw new Error(`${operationId}: unknown x-renderer ${String(named)}`);
  const responses = (operation.responses ?? {}) as Record<string, { content?: Record<string, unknown> }>;
  for (const [status, response] of Object.entries(responses)) {
    const content = response?.content ?? {};
    if (/^2/.test(status) && content['application/json'] && !content[rendererMediaType(named)])
      throw new Error(`${operationId}: ${status} answers JSON but does not declare ${rendererMediaType(named)}`);
  }
  return named;
}

/**
 * The contract with each path item's parameters copied into its operations (an operation's own parameter of the
 * same name and place wins, as OpenAPI says). fastify-openapi-glue replaces the path item's query parameters
 * with the operation's when both have some, so a path-level `format` would otherwise go unchecked.
 */
function withPathParameters(doc: Spec): Spec {
  const key = (p: QueryParam) => {
    const resolved = p.$ref ? (doc.components.parameters?.[p.$ref.split('/').pop()!] as QueryParam) : p;
    return `${resolved?.in} ${resolved?.name}`;
  };
  const paths: Spec['paths'] = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    const { parameters, ...operations } = item as Record<string, SpecOperation> & { parameters?: QueryParam[] };
    const shared = parameters ?? [];
    paths[path] = Object.fromEntries(
      Object.entries(operations).map(([method, op]) => {
        if (!op || typeof op !== 'object' || !('operationId' in op)) return [method, op];
        const own = (op.parameters ?? []) as QueryParam[];
        const names = new Set(own.map(key));
        return [method, { ...op, parameters: [...shared.filter((p) => !names.has(key(p))), ...own] }];
      }),
    );
  }
  return { ...doc, paths };
}

/** Operations that never touch the database keep answering during an outage. */
const NO_DATABASE = new Set(['health_retrieve', 'schema_retrieve']);

async function refuseWhileDatabaseDown(req: FastifyRequest): Promise<void> {
  if (!req.server.database.available()) throw ApiError.unavailable();
}

/**
 * The handler, answered 503 if it has not settled after `seconds`: a driver call that never settles
 * must not leave the client waiting for ever (the handler's late result is dropped).
 */
function withDeadline(handler: RouteOptions['handler'], seconds: number): RouteOptions['handler'] {
  return function (this: FastifyInstance, req, reply) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(ApiError.stalled()), seconds * 1000);
    });
    return Promise.race([Promise.resolve(handler.call(this, req, reply)), late]).finally(() => clearTimeout(timer));
  };
}

/**
 * OpenAPI 3.0 writes a nullable reference as `{type: object, nullable: true, allOf: [ref]}`. Serialized alone
 * fast-json-stringify writes its null, but inside a union (a shared page answers a Dashboard or an Insight)
 * it picks the branch by validating, and there the `allOf` refuses null. Written as JSON Schema says it,
 * `anyOf: [ref, null]`, both agree.
 */
export function nullableAllOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(nullableAllOf);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = nullableAllOf(v);
  if (out.nullable !== true || !Array.isArray(out.allOf)) return out;
  const { nullable: _nullable, ...rest } = out;
  return { anyOf: [rest, { type: 'null' }] };
}

/**
 * The handler of each operationId (src/operations/index.ts), handed in by the app so that the HTTP layer
 * depends on no resource.
 */
export type HandlerTable = Readonly<Record<string, unknown>>;

/**
 * Binds every operation of the contract to its handler by operationId. JSON bodies are typed
 * strictly ("true" is not a boolean) while query and path parameters are coerced from strings.
 * Authentication, key scoping, scope and membership checks run in onRequest, before the body is
 * even parsed, so an anonymous or unauthorised caller learns nothing from validation errors.
 */
export async function registerOperations(app: FastifyInstance, handlers: HandlerTable): Promise<void> {
  const strict = makeAjv(false);
  const coercing = makeAjv('array');
  const strictValidator = sharedBy((schema) => strict.compile(schema));
  const coercingValidator = sharedBy((schema) => coercing.compile(schema));
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? strictValidator : coercingValidator)(schema),
  );
  // Fastify's default serializer (fast-json-stringify; no shared schemas, the contract's are inlined),
  // compiled once per distinct schema.
  const serializer = sharedBy((schema) => fastJsonStringify(nullableAllOf(schema) as object));
  app.setSerializerCompiler(({ schema }) => serializer(schema));
  compiledSchemas.set(app, {
    counts: () => ({
      validators: strictValidator.count() + coercingValidator.count(),
      serializers: serializer.count(),
    }),
    compileAll() {
      for (const shared of [strictValidator, coercingValidator, serializer]) shared.compileAll();
    },
  });

  // These media types appear only in responses (contract, CSV, tile streams, shared pages and their files); as
  // request bodies they are a 415.
  app.addContentTypeParser(
    [
      'application/vnd.oai.openapi',
      'application/vnd.oai.openapi+json',
      'text/csv',
      'text/event-stream',
      'text/html',
      'application/javascript',
      'text/css',
    ],
    (_req, _body, done) =>
      done(
        Object.assign(new Error('Unsupported media type in request.'), {
          code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE',
          statusCode: 415,
        }),
        undefined,
      ),
  );
  await app.register(openapiGlue, {
    specification: withPathParameters(spec),
    operationResolver(operationId: string, method: string, openapiPath: string) {
      const handler = handlers[operationId];
      if (!handler) throw new Error(`No handler for operation ${operationId}`);
      const operation = spec.paths[openapiPath]?.[method.toLowerCase()] ?? {};
      const meta = routeMeta(openapiPath, operation, spec.security);
      const hasJsonBody = Boolean(
        (operation.requestBody as { content?: Record<string, unknown> } | undefined)?.content?.['application/json'],
      );
      const queryParams = (
        [
          ...((spec.paths[openapiPath]?.parameters ?? []) as unknown[]),
          ...((operation.parameters ?? []) as unknown[]),
        ] as QueryParam[]
      )
        .map((p) => (p.$ref ? (spec.components.parameters?.[p.$ref.split('/').pop()!] as QueryParam) : p))
        .filter((p) => p?.in === 'query');
      const queryNames = new Set(queryParams.map((p) => p.name!));
      const renderer = rendererOf(operationId, operation, queryParams);
      return {
        handler: withDeadline(handler as RouteOptions['handler'], app.config.requestDeadlineSeconds),
        config: { operationId, renderer } as RouteOptions['config'],
        onRequest: [
          ...(NO_DATABASE.has(operationId) ? [] : [refuseWhileDatabaseDown]),
          ...(meta.scopes ? [authenticate(meta)] : []),
        ],
        ...(renderer ? { onSend: renderAnswer } : {}),
        preValidation: async (req: FastifyRequest) => guardInput(req, hasJsonBody, queryNames),
        ...(operation['x-body-limit'] ? { bodyLimit: Number(operation['x-body-limit']) } : {}),
      } as unknown as RouteOptions;
    },
  });
}
