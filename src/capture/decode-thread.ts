// Large capture bodies, and every compressed body that inflates past a small bound, are decoded on
// threads of their own (decode-worker.ts): inflating and parsing 20 MiB of JSON takes a few hundred
// milliseconds, which on the server's own thread would stall every other request, `/_health`
// included. The events come back in slices, one per turn of the event loop, since taking a whole
// batch back at once would stall it again. The threads are few and their queue is bounded, so many
// such bodies at once (decompression bombs among them) take a bounded share of cores and memory.
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { DecodeAnswer, DecodeRequest } from './decode-worker.js';
import type { RawCapture } from './decode.js';
import { nextTurn } from '../core/turns.js';
import { ApiError } from '../core/errors.js';

export interface DecoderLimits {
  /** Threads decoding at once; each decodes one body at a time. */
  threads: number;
  /** Bodies waiting for a thread; past that a body is refused with a 503 to retry. */
  queue: number;
}

/**
 * Bodies of less than this are decoded in place (a few milliseconds, less than a round trip to the
 * thread is worth), as long as they inflate to at most IN_PLACE_INFLATE_BYTES.
 */
export const OFF_THREAD_BYTES = 1024 * 1024;
/** The most a compressed body is inflated on the server's own thread (about a millisecond of work). */
export const IN_PLACE_INFLATE_BYTES = 256 * 1024;
/** About how much JSON one slice carries: a millisecond or two to take in. */
const SLICE_BYTES = 256 * 1024;
/** The thread is stopped after this long without work, giving its memory back. */
const IDLE_MS = 30_000;

/**
 * In the bundle (scripts/build.mjs) this code is part of server.mjs, with decode-worker.mjs beside
 * it. From the sources the thread runs decode-worker.ts through tsx: a loader registered with
 * `--import` does not reach worker threads on Node 20, so the thread registers it itself.
 */
function startThread(): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./decode-worker.mjs', import.meta.url));
  const source = JSON.stringify(new URL('./decode-worker.ts', import.meta.url).href);
  return new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${source}); });`, {
    eval: true,
  });
}

type Settle = (answer: DecodeAnswer | Error) => void;

class DecoderThread {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly waiting = new Map<number, Settle>();
  private idle: NodeJS.Timeout | undefined;

  async decode(raw: RawCapture & { body: Buffer }): Promise<unknown> {
    clearTimeout(this.idle);
    const worker = (this.worker ??= this.start());
    const id = ++this.nextId;
    const { port1, port2 } = new MessageChannel();
    const { body } = raw;
    // A body that owns its memory is handed over rather than copied.
    const owned =
      body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer;
    const request: DecodeRequest = { id, raw: { ...raw, body }, slices: port2, sliceBytes: SLICE_BYTES };
    try {
      const answer = await new Promise<DecodeAnswer | Error>((resolve) => {
        this.waiting.set(id, resolve);
        worker.postMessage(request, owned ? [port2, body.buffer as ArrayBuffer] : [port2]);
      });
      if (answer instanceof Error) throw answer;
      if ('apiError' in answer) {
        const e = answer.apiError;
        throw new ApiError(e.statusCode, e.type, e.code, e.detail, e.attr);
      }
      if ('failure' in answer) throw new Error(`Decoding a capture body failed: ${answer.failure}`);
      if ('whole' in answer) return answer.whole;
      const events: unknown[] = [];
      for (let i = 0; i < answer.slices; i++) {
        if (i > 0) await nextTurn();
        const slice = receiveMessageOnPort(port1)?.message as unknown[] | undefined;
        if (!slice) throw new Error('The capture decoder lost a slice of a batch');
        for (const event of slice) events.push(event);
      }
      if (!answer.envelope) return events;
      answer.envelope.batch = events;
      return answer.envelope;
    } finally {
      port1.close();
      this.waiting.delete(id);
      this.stopWhenIdle();
    }
  }

  private start(): Worker {
    const worker = startThread();
    // An idle decoder never keeps the process alive.
    worker.unref();
    worker.on('message', (answer: DecodeAnswer) => this.waiting.get(answer.id)?.(answer));
    worker.on('error', (err) => this.lost(worker, err));
    worker.on('exit', (code) => this.lost(worker, new Error(`The capture decoder stopped (exit code ${code})`)));
    return worker;
  }

  /** The thread died (out of memory, say): the requests it held fail, and the next one starts another. */
  private lost(worker: Worker, err: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    for (const settle of this.waiting.values()) settle(err);
    this.waiting.clear();
  }

  private stopWhenIdle(): void {
    if (this.waiting.size) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(() => {
      const worker = this.worker;
      if (!worker || this.waiting.size) return;
      this.worker = undefined;
      void worker.terminate();
    }, IDLE_MS);
    this.idle.unref();
  }
}

/** A capture body refused because the decoders' queue is full (counted in the abort log, not logged each). */
export class DecodersBusy extends ApiError {
  readonly counted = true;
}

function decodersBusy(): ApiError {
  return new DecodersBusy(
    503,
    'server_error',
    'service_unavailable',
    'The server is busy decoding other requests. Try again shortly.',
    null,
    { 'retry-after': '1' },
  );
}

interface Waiting {
  raw: RawCapture & { body: Buffer };
  /** True once the request is gone (its client hung up): its body is then not decoded at all. */
  abandoned: () => boolean;
  resolve: (doc: unknown) => void;
  reject: (err: Error) => void;
}

/** A few decoder threads and a bounded line of bodies waiting for one. */
class DecoderPool {
  private idle: DecoderThread[] = [];
  private busy = 0;
  private readonly line: Waiting[] = [];

  constructor(private limits: DecoderLimits) {}

  configure(limits: DecoderLimits): void {
    this.limits = { threads: Math.max(1, limits.threads), queue: Math.max(0, limits.queue) };
  }

  decode(raw: RawCapture & { body: Buffer }, abandoned: () => boolean = () => false): Promise<unknown> {
    if (this.line.length >= this.limits.queue && this.busy >= this.limits.threads) {
      return Promise.reject(decodersBusy());
    }
    return new Promise((resolve, reject) => {
      this.line.push({ raw, abandoned, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.busy < this.limits.threads && this.line.length) {
      const job = this.line.shift()!;
      if (job.abandoned()) {
        // Nobody reads this answer: it only ends the request quietly.
        job.reject(new ApiError(400, 'invalid_request', 'client_closed', 'The client closed the connection.'));
        continue;
      }
      const thread = this.idle.pop() ?? new DecoderThread();
      this.busy++;
      thread
        .decode(job.raw)
        .then(job.resolve, job.reject)
        .finally(() => {
          this.busy--;
          if (this.idle.length + this.busy < this.limits.threads) this.idle.push(thread);
          this.next();
        });
    }
  }
}

const pool = new DecoderPool({ threads: 1, queue: 32 });

/** Sets how many decoder threads run and how many bodies may wait for one (the server's configuration). */
export function configureDecoders(limits: DecoderLimits): void {
  pool.configure(limits);
}

/** `decodeCapture`, on a decoder thread; skipped when `abandoned()` says the request is gone by its turn. */
export function decodeOffThread(raw: RawCapture & { body: Buffer }, abandoned?: () => boolean): Promise<unknown> {
  return pool.decode(raw, abandoned);
}
