import { randomBytes } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { Database, Db } from '../../src/db/client.js';
import type { OperationId, SuccessBody } from '../../src/http/types.js';
import { openTestDatabase } from './db.js';
import { operationInfo, validateResponse } from './spec-validator.js';

export interface CallOptions {
  params?: Record<string, string | number>;
  query?: Record<string, string | number | boolean | string[]>;
  body?: unknown;
  /** A personal API key value; omit for an anonymous call. */
  key?: string;
  headers?: Record<string, string>;
  /** Send this exact payload instead of JSON-encoding `body`. */
  payload?: string | Buffer;
}

/** The fields of PostHog's error body, which any operation may answer. */
interface ErrorFields {
  type?: string;
  code?: string;
  detail?: string;
  attr?: string | null;
}

/** Indices a test reads literally (`results[0]`): present, so that reading a field of one needs no `!`. */
type Indices = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;

type KeysOfUnion<T> = T extends unknown ? keyof T : never;
type ValueOf<T, K extends PropertyKey> = T extends unknown ? (K extends keyof T ? T[K] : never) : never;
type IsUnion<T, U = T> = T extends unknown ? ([U] extends [T] ? false : true) : never;

/**
 * A success body as tests read it: every field the contract names, present and not null (tests assert
 * values, so a missing one fails the assertion, not the type check), and no field the contract does not
 * name, so a field renamed in the contract breaks the test's type check. The shapes of a union (a 200 or
 * a 201 body) merge into one with the fields of each.
 */
export type Checked<T> = [T] extends [readonly (infer E)[]]
  ? Checked<E>[] & { [I in Indices]: Checked<E> }
  : [T] extends [object]
    ? { -readonly [K in KeysOfUnion<T>]-?: Checked<NonNullable<ValueOf<T, K>>> }
    : T;

/**
 * `body` of an answer to `O`: its success body checked as above, with the error fields. Untyped when the
 * operation is not one known literal (a loop over operations) or its success body is not JSON.
 */
export type BodyOf<O extends OperationId | undefined> = [O] extends [OperationId]
  ? true extends IsUnion<O>
    ? any
    : unknown extends SuccessBody<O>
      ? any
      : // biome-ignore lint/suspicious/noConfusingVoidType: a 204 operation's success body is void (src/http/types.ts)
        [SuccessBody<O>] extends [void]
        ? ErrorFields
        : Checked<NonNullable<SuccessBody<O>>> & ErrorFields
  : any;

export interface CallResult<O extends OperationId | undefined = undefined> {
  status: number;
  body: BodyOf<O>;
  headers: LightMyRequestResponse['headers'];
  raw: string;
}

/**
 * The body of a success answer, typed by the operation's success response in generated/api.d.ts:
 * `json<'dashboards_list'>(res).results`. Any other status fails the test here, showing the body.
 */
export function json<O extends OperationId>(res: CallResult): SuccessBody<O> {
  if (res.status < 200 || res.status > 299) throw new Error(`Expected a success answer, got ${res.status}: ${res.raw}`);
  return res.body as SuccessBody<O>;
}

export interface TestContext {
  app: FastifyInstance;
  db: Db;
  database: Database;
  /** The database's URL (for tests that need a second connection or process); a socket folder is `?host=`. */
  url: string;
  /** Calls an operation by operationId and fails the test if the answer breaks the contract. */
  call<O extends OperationId>(operationId: O, opts?: CallOptions): Promise<CallResult<O>>;
  inject(opts: InjectOptions): Promise<LightMyRequestResponse>;
  /** Runs `fn` at teardown before the app and database close (for workers and servers that use them). */
  beforeClose(fn: () => Promise<void>): void;
}

/**
 * The private networks tests may reach: their helper servers listen on 127.0.0.1 (and ::1). Tests of
 * the network policy itself override `allowPrivateNetworks`.
 */
export const TEST_PRIVATE_NETWORKS = '127.0.0.0/8,::1/128';

/**
 * The production app on a fresh database of its own, torn down with the test. Every answer that goes
 * through `call` is checked against openapi.yaml.
 */
export async function buildTestApp(
  t: Test,
  overrides: Partial<Config> = {},
  /** Told every statement the app's pools send (see DbOptions.onStatement). */
  onStatement?: (text: string) => void,
): Promise<TestContext> {
  const { database, url, drop } = await openTestDatabase(onStatement);
  // A key of the test's own, so that no test writes a key file into the working directory's data folder.
  const config = {
    ...loadConfig({
      RATE_LIMITS: 'off',
      WORKER: '0',
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      ALLOW_PRIVATE_NETWORKS: TEST_PRIVATE_NETWORKS,
    }),
    ...overrides,
  };
  const app = await buildApp({
    config,
    database,
    logger: process.env.TEST_LOG ? { level: process.env.TEST_LOG } : false,
  });
  const closers: (() => Promise<void>)[] = [];
  t.teardown(async () => {
    for (const fn of closers.reverse()) await fn();
    await app.close();
    await database.close();
    await drop();
  });

  async function call<O extends OperationId>(operationId: O, opts: CallOptions = {}): Promise<CallResult<O>> {
    const { method, path } = operationInfo(operationId);
    const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = opts.params?.[name];
      if (value === undefined) throw new Error(`${operationId}: missing path parameter ${name}`);
      return encodeURIComponent(String(value));
    });
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    const res = await app.inject({
      method: method as InjectOptions['method'],
      url,
      query: opts.query as InjectOptions['query'],
      headers,
      ...(opts.payload !== undefined
        ? { payload: opts.payload }
        : opts.body !== undefined
          ? { payload: opts.body as object }
          : {}),
    });
    const problems = validateResponse(
      operationId,
      res.statusCode,
      res.headers['content-type'] as string | undefined,
      res.body,
    );
    if (problems.length) throw new Error(`Response breaks the contract:\n${problems.join('\n')}`);
    let body: unknown = res.body;
    if (/json/.test(String(res.headers['content-type'] ?? '')) && res.body) body = JSON.parse(res.body);
    // The contract validated it above; what the type adds is the test's reading of it.
    return { status: res.statusCode, body: body as BodyOf<O>, headers: res.headers, raw: res.body };
  }

  return {
    app,
    db: database.db,
    database,
    url,
    call,
    inject: (o) => app.inject(o),
    beforeClose: (fn) => void closers.push(fn),
  };
}
