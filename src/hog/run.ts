// Runs HogVM bytecode on PostHog's own VM (@posthog/hogvm) with PostHog's CDP limits. The VM runs on the
// caller's thread: its sync time is capped by `timeoutMs` (checked every 32 operations and at every call), so a
// program that loops forever holds the event loop for that long at most, and the memory its stack holds is
// capped by `memoryLimit`. Async functions (fetch) suspend the VM; their time does not count as sync time.
import hogvm, { type ExecResult, type VMState } from '@posthog/hogvm';
import { HOG_EXTERNAL } from './external.js';

/** PostHog's CDP limits (plugin-server hog executor): 100 ms of sync time, 5 async calls, 25 log lines. */
export const HOG_LIMITS = {
  timeoutMs: 100,
  maxAsyncSteps: 5,
  /** The VM's default: bytes held on its stack. */
  memoryLimit: 64 * 1024 * 1024,
  maxLogs: 25,
  maxLogLength: 10_000,
  /**
   * Filters: PostHog gives them the VM's default (5 s); they are expressions without loops, so a second is
   * ample even on a busy machine, where the first run of a regex or date function can take tens of ms.
   */
  filterTimeoutMs: 1_000,
} as const;

export type HogLogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

export interface HogLog {
  level: HogLogLevel;
  message: string;
  /** ISO 8601, when the line was written. */
  timestamp: string;
}

export type HogAsyncFunction = (...args: unknown[]) => Promise<unknown>;

export interface RunOptions {
  /** What the program reads as globals (`event`, `inputs`, `person`...). */
  globals?: Record<string, unknown>;
  /** Sync functions beyond the VM's library; arguments and results are plain JS values. */
  functions?: Record<string, (...args: unknown[]) => unknown>;
  /** Async functions (e.g. `fetch`), implemented by the caller; each call is one async step. */
  asyncFunctions?: Record<string, HogAsyncFunction>;
  /** Values (secrets) replaced by `***REDACTED***` in logs. */
  sensitiveValues?: string[];
  timeoutMs?: number;
  maxAsyncSteps?: number;
  memoryLimit?: number;
  maxLogs?: number;
}

export interface RunResult {
  /** False when the VM stopped on an error: thrown by the program, a limit, or a failed async function. */
  ok: boolean;
  /** The program's return value as plain JS (dicts as objects), null when it returned nothing. */
  result: unknown;
  /** Why it stopped, e.g. "Execution timed out after 0.1 seconds. Performed 4000 ops." */
  error?: string;
  logs: HogLog[];
  /** Wall time, including async functions. */
  durationMs: number;
  /** Operations the VM performed. */
  ops: number;
  asyncSteps: number;
  /** Most memory the VM's stack held, in bytes. */
  memUsed: number;
}

/** A print argument as PostHog logs it: strings as they are, other values as JSON, joined by ", ". */
export function formatLogMessage(args: unknown[], sensitiveValues: string[] = []): string {
  let message = args.map((a) => (typeof a === 'string' ? a : (JSON.stringify(a) ?? String(a)))).join(', ');
  for (const secret of sensitiveValues) {
    if (secret) message = message.split(secret).join('***REDACTED***');
  }
  if (message.length > HOG_LIMITS.maxLogLength) {
    message = `${message.slice(0, HOG_LIMITS.maxLogLength)}... (truncated)`;
  }
  return message;
}

function errorText(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { __hogError__?: boolean; type?: string; message?: string; name?: string };
    if (e.__hogError__) return `${e.type}: ${e.message}`;
    if (err instanceof Error) return err.name && err.name !== 'Error' ? `${err.name}: ${err.message}` : err.message;
  }
  return String(err);
}

/** Executes bytecode to its end, awaiting async functions between the VM's sync steps. */
export async function runHog(bytecode: unknown[], options: RunOptions = {}): Promise<RunResult> {
  const started = performance.now();
  const logs: HogLog[] = [];
  const maxLogs = options.maxLogs ?? HOG_LIMITS.maxLogs;
  let printed = 0;
  const log = (level: HogLogLevel, message: string) => {
    logs.push({ level, message, timestamp: new Date().toISOString() });
  };
  const print = (...args: unknown[]) => {
    printed++;
    if (printed === maxLogs + 1) {
      log('WARN', 'Function exceeded maximum log entries. No more logs will be collected.');
    }
    if (printed > maxLogs) return;
    log('INFO', formatLogMessage(args, options.sensitiveValues));
  };
  const asyncFunctions = options.asyncFunctions ?? {};
  const execOptions = {
    globals: options.globals ?? {},
    functions: { ...options.functions, print },
    // Names only: the VM suspends on these and this loop runs them.
    asyncFunctions: asyncFunctions as Record<string, (...args: unknown[]) => Promise<unknown>>,
    timeout: options.timeoutMs ?? HOG_LIMITS.timeoutMs,
    maxAsyncSteps: options.maxAsyncSteps ?? HOG_LIMITS.maxAsyncSteps,
    memoryLimit: options.memoryLimit ?? HOG_LIMITS.memoryLimit,
    external: HOG_EXTERNAL,
  };

  let state: VMState | undefined;
  const outcome = (ok: boolean, result: unknown, error?: string, last?: VMState): RunResult => ({
    ok,
    result,
    ...(error === undefined ? {} : { error }),
    logs,
    durationMs: performance.now() - started,
    ops: last?.ops ?? state?.ops ?? 0,
    asyncSteps: last?.asyncSteps ?? state?.asyncSteps ?? 0,
    memUsed: last?.maxMemUsed ?? state?.maxMemUsed ?? 0,
  });

  for (;;) {
    let res: ExecResult;
    try {
      res = hogvm.exec(state ?? bytecode, execOptions);
    } catch (err) {
      return outcome(false, null, errorText(err));
    }
    if (res.finished) return outcome(true, hogvm.convertHogToJS(res.result) ?? null, undefined, res.state);
    if (res.error) return outcome(false, null, errorText(res.error), res.state);
    const name = res.asyncFunctionName;
    const fn = name !== undefined && Object.hasOwn(asyncFunctions, name) ? asyncFunctions[name] : undefined;
    if (!res.state || !fn) return outcome(false, null, `Invalid async function call: ${name}`, res.state);
    state = res.state;
    try {
      state.stack.push(await fn(...(res.asyncFunctionArgs ?? [])));
    } catch (err) {
      return outcome(false, null, errorText(err));
    }
  }
}
