import crypto from 'node:crypto';
import hogvm from '@posthog/hogvm';
import { matchesFilters as matchFilterBytecode } from '../hog/filters.js';
import { runHog as run } from '../hog/index.js';

type Json = Record<string, unknown>;

/** HogVM operations (its `Operation` enum, a const enum its types do not let us read at run time). */
const STRING = 32;
const TRUE = 29;

/** PostHog's CDP limit on each input template and filter: 100 ms of VM time. */
const HOG_TIMEOUT_MS = 100;

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
export interface LogLine {
  level: LogLevel;
  message: string;
  timestamp: Date;
}

export interface FetchResponse {
  status: number;
  body: unknown;
}
export type HogFetch = (url: string, init: Json) => Promise<FetchResponse>;

export interface RunResult {
  result: unknown;
  error?: string;
  /** The error came from `fetch` and deserves another attempt (PostHog's retryable statuses, timeouts). */
  retryable?: boolean;
  logs: LogLine[];
}

/** An error `fetch` raises to abort the run so the job is attempted again. */
export class RetryableFetchError extends Error {}

/** A compiled input (PostHog's formatHogInput): template bytecode runs on the globals; objects, arrays walked. */
export function resolveInput(bytecode: unknown, globals: Json): unknown {
  if (Array.isArray(bytecode)) {
    // A template without placeholders compiles to "push this string": its value, without a VM run per event.
    if (bytecode.length === 4 && bytecode[0] === '_H' && bytecode[2] === STRING && typeof bytecode[3] === 'string')
      return bytecode[3];
    if (bytecode[0] === '_H' || bytecode[0] === '_h') {
      const res = hogvm.exec(bytecode, { globals, timeout: HOG_TIMEOUT_MS, maxAsyncSteps: 0, external: { crypto } });
      return hogvm.convertHogToJS(res.result);
    }
    return bytecode.map((b) => resolveInput(b, globals));
  }
  if (bytecode && typeof bytecode === 'object') {
    return Object.fromEntries(Object.entries(bytecode).map(([k, v]) => [k, resolveInput(v, globals)]));
  }
  return bytecode;
}

/** Every input's value for this event: compiled ones run, the others as stored. */
export function resolveInputs(inputs: Record<string, Json>, globals: Json): Json {
  const out: Json = {};
  const ordered = Object.entries(inputs).sort(([, a], [, b]) => Number(a.order ?? 0) - Number(b.order ?? 0));
  for (const [key, item] of ordered) out[key] = 'bytecode' in item ? resolveInput(item.bytecode, globals) : item.value;
  return out;
}

/**
 * Whether the filters' bytecode matches these filter globals (true only for a boolean true, as PostHog);
 * no bytecode matches everything, filters that failed to compile match nothing.
 */
export function matchesFilters(filters: Json, filterGlobals: Json | (() => Json)): boolean {
  if (filters.bytecode_error) return false;
  const bytecode = filters.bytecode;
  if (!Array.isArray(bytecode) || matchesEverything(bytecode)) return true;
  return matchFilterBytecode(
    bytecode,
    typeof filterGlobals === 'function' ? filterGlobals() : filterGlobals,
    HOG_TIMEOUT_MS,
  ).match;
}

/** Filters without any condition compile to "true" (as PostHog's): no event needs its filter globals or a VM run. */
export const matchesEverything = (bytecode: unknown[]) =>
  bytecode.length === 3 && bytecode[0] === '_H' && bytecode[2] === TRUE;

/**
 * Runs a function's bytecode on PostHog's VM with its limits (src/hog): `print` becomes a log line,
 * `fetch` (destinations only) is the given one. A loop, a memory bomb or an exception ends the run with
 * an error; `retryable` tells whether the error came from a fetch worth another attempt.
 */
export async function runHog(
  bytecode: unknown[],
  globals: Json,
  options: { fetch?: HogFetch; secrets?: string[]; timeoutMs?: number } = {},
): Promise<RunResult> {
  let retryable = false;
  const fetch = options.fetch;
  const res = await run(bytecode, {
    globals,
    sensitiveValues: options.secrets ?? [],
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    functions: {
      // The VM's own hashing needs node's crypto handed in; these are the same functions with it.
      sha256Hex: (v: unknown) => (v == null ? null : crypto.createHash('sha256').update(String(v)).digest('hex')),
      md5Hex: (v: unknown) => (v == null ? null : crypto.createHash('md5').update(String(v)).digest('hex')),
      postHogCapture: () => {
        throw new Error('postHogCapture is not available on this server');
      },
    },
    asyncFunctions: fetch
      ? {
          fetch: async (url: unknown, init: unknown) => {
            try {
              return await fetch(String(url), (init ?? {}) as Json);
            } catch (err) {
              retryable = err instanceof RetryableFetchError;
              throw err;
            }
          },
        }
      : {},
  });
  const logs: LogLine[] = res.logs.map((l) => ({
    level: l.level,
    message: l.message,
    timestamp: new Date(l.timestamp),
  }));
  const mask = (m: string) =>
    (options.secrets ?? []).reduce((acc, x) => (x ? acc.split(x).join('***REDACTED***') : acc), m);
  if (res.ok) {
    logs.push({
      level: 'DEBUG',
      message: `Function completed in ${Math.round(res.durationMs)}ms.`,
      timestamp: new Date(),
    });
    return { result: res.result ?? null, logs };
  }
  const error = mask(res.error ?? 'Unknown error');
  logs.push({ level: 'ERROR', message: `Error executing function: ${error}`, timestamp: new Date() });
  return { result: null, error, retryable, logs };
}
