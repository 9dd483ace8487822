// Parses HogQL on a thread of its own (parse-worker.ts), so that a long query's parse never holds the
// server's event loop; see parse-worker.ts for why.
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { actingOrganization } from '../core/client-gone.js';
import { QueryError } from './errors.js';
import type { ParseAnswer, ParseKind, ParseRequest } from './parse-worker.js';

/** A parse that takes longer than this is refused and its thread replaced (PostHog's parser has no way to stop). */
const PARSE_TIMEOUT_MS = 3_000;
/**
 * The server's own texts (the insight kinds' queries, each shape parsed once per process and kept) take the
 * parser a second or more on a busy machine: they get longer.
 */
const OWN_TEXT_TIMEOUT_MS = 30_000;
/**
 * The limits are of the parser's own CPU time where Linux tells it, so that a machine busy with other work does
 * not refuse a parse that had little of it; a parse that waits for the CPU is refused all the same after this
 * many times its limit.
 */
const MAX_WAIT_FACTOR = 4;
/** The thread is stopped after this long without work, giving its memory (about 30 MB) back. */
const IDLE_MS = 60_000;

/**
 * In the bundle (scripts/build.mjs) this code is part of server.mjs, with hogql-parse-worker.mjs beside it. From
 * the sources the thread runs parse-worker.ts through tsx: a loader registered with `--import` does not reach
 * worker threads on Node 20, so the thread registers it itself.
 */
function startThread(): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./hogql-parse-worker.mjs', import.meta.url));
  const source = JSON.stringify(new URL('./parse-worker.ts', import.meta.url).href);
  return new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${source}); });`, {
    eval: true,
  });
}

/** The CPU time (user and system) the thread `tid` of this process has had, in ms; undefined where unknown. */
function threadCpuMs(tid: number | undefined): number | undefined {
  if (tid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // After the command name in parentheses: state, then fields 4 on; utime and stime are fields 14 and 15,
    // in clock ticks (USER_HZ, 100 a second on Linux).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

interface Pending {
  request: ParseRequest;
  settle: (answer: ParseAnswer | Error) => void;
}

/**
 * One parse at a time goes to the thread, so that the time limit measures that parse alone (not the wait
 * behind others, nor the thread's start). Waiting parses are taken in turns between the organizations they
 * are for (in order within one), so a tenant that sends many slow parses delays another's by one parse at
 * most, not by its whole queue.
 */
class ParserThread {
  private worker: Worker | undefined;
  private ready = false;
  /** The thread's id, where its CPU time can be read (see threadCpuMs). */
  private tid: number | undefined;
  private nextId = 0;
  /** The waiting parses by organization ('' outside a request), in the order of their turns. */
  private readonly queues = new Map<string, Pending[]>();
  /** The organization whose turn it is, with its waiting parses: it goes behind those that came meanwhile. */
  private serving: { turn: string; queue: Pending[] } | undefined;
  private current: Pending | undefined;
  private timer: NodeJS.Timeout | undefined;
  private idle: NodeJS.Timeout | undefined;

  constructor(private readonly timeoutMs: number) {}

  async parse(kind: ParseKind, text: string): Promise<unknown> {
    clearTimeout(this.idle);
    const turn = actingOrganization() ?? '';
    const answer = await new Promise<ParseAnswer | Error>((settle) => {
      const pending = { request: { id: ++this.nextId, kind, text }, settle };
      const queue = this.serving?.turn === turn ? this.serving.queue : this.queues.get(turn);
      if (queue) queue.push(pending);
      else this.queues.set(turn, [pending]);
      this.pump();
    });
    if (answer instanceof Error) throw answer;
    if ('error' in answer) {
      const err = new QueryError(answer.error.message, answer.error.start, answer.error.end);
      err.syntax = answer.error.syntax;
      throw err;
    }
    return answer.ast;
  }

  private pump(): void {
    if (this.current) return;
    if (!this.worker) this.worker = this.start();
    // The thread keeps the process alive only while a parse waits on it (its 'message' listener refs it).
    if (this.queues.size === 0 && !this.serving?.queue.length) this.worker.unref();
    else this.worker.ref();
    if (!this.ready) return;
    const next = this.nextTurn();
    if (!next) {
      this.idle = setTimeout(() => this.stop(), IDLE_MS);
      this.idle.unref();
      return;
    }
    this.current = next;
    this.limit(Date.now(), threadCpuMs(this.tid));
    this.worker.postMessage(next.request);
  }

  /**
   * Refuses the parse in hand once it has had the thread's CPU for the limit (or, where that cannot be read,
   * once the limit has passed), and the thread is replaced for the parses after it: PostHog's parser has no way
   * to stop. Checked again when the limit passes with less CPU time used.
   */
  private limit(startedAt: number, cpuAtStart: number | undefined, wait = this.timeoutMs): void {
    this.timer = setTimeout(() => {
      const cpuNow = threadCpuMs(this.tid);
      const used = cpuAtStart === undefined || cpuNow === undefined ? undefined : cpuNow - cpuAtStart;
      const waited = Date.now() - startedAt;
      if (used !== undefined && used < this.timeoutMs && waited < this.timeoutMs * MAX_WAIT_FACTOR) {
        this.limit(startedAt, cpuAtStart, Math.max(50, this.timeoutMs - used));
        return;
      }
      this.finish(new QueryError(`Query took longer than ${this.timeoutMs / 1000} seconds to parse: simplify it`));
      this.stop();
      this.pump();
    }, wait);
  }

  /** The first parse of the organization whose turn it is now; the one served last goes to the back. */
  private nextTurn(): Pending | undefined {
    if (this.serving?.queue.length) this.queues.set(this.serving.turn, this.serving.queue);
    this.serving = undefined;
    const first = this.queues.entries().next();
    if (first.done) return undefined;
    const [turn, queue] = first.value;
    this.queues.delete(turn);
    this.serving = { turn, queue };
    return queue.shift();
  }

  private finish(answer: ParseAnswer | Error): void {
    clearTimeout(this.timer);
    const current = this.current;
    this.current = undefined;
    current?.settle(answer);
  }

  private start(): Worker {
    const worker = startThread();
    worker.on('message', (msg: ParseAnswer | { ready: true; tid?: number }) => {
      if (worker !== this.worker) return;
      if ('ready' in msg) {
        this.ready = true;
        this.tid = msg.tid;
      } else if (msg.id === this.current?.request.id) this.finish(msg);
      this.pump();
    });
    const failed = (err: Error) => {
      if (worker !== this.worker) return;
      this.stop();
      this.finish(err);
      // Parses still queued go to a new thread; if threads cannot start at all, they are refused.
      for (const queue of [...this.queues.values(), this.serving?.queue ?? []]) for (const p of queue) p.settle(err);
      this.queues.clear();
      this.serving = undefined;
    };
    worker.on('error', failed);
    worker.on('exit', () => failed(new Error('The HogQL parser thread stopped')));
    return worker;
  }

  private stop(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.ready = false;
    this.tid = undefined;
    void worker?.terminate();
  }
}

/**
 * People's texts and the server's own have a thread each: a kind's long parse never holds up a person's
 * query, nor the other way round.
 */
const threads = { people: new ParserThread(PARSE_TIMEOUT_MS), own: new ParserThread(OWN_TEXT_TIMEOUT_MS) };

/** `own`: a text the server wrote (see OWN_TEXT_TIMEOUT_MS). */
export function parseOffThread(kind: ParseKind, text: string, own = false): Promise<unknown> {
  return (own ? threads.own : threads.people).parse(kind, text);
}
