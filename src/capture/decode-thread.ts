// Large capture bodies are decoded on a thread of their own (decode-worker.ts): inflating and
// parsing 20 MiB of JSON takes a few hundred milliseconds, which on the server's own thread would
// stall every other request, `/_health` included. The events come back in slices, one per turn of
// the event loop, since taking a whole batch back at once would stall it again.
import { MessageChannel, receiveMessageOnPort, Worker } from 'node:worker_threads';
import type { DecodeAnswer, DecodeRequest } from './decode-worker.js';
import type { RawCapture } from './decode.js';
import { nextTurn } from './turns.js';
import { ApiError } from '../core/errors.js';

/**
 * Bodies that decode to less than this are decoded in place: a few milliseconds, less than a round trip to the thread
 * is worth.
 */
export const OFF_THREAD_BYTES = 1024 * 1024;
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

const thread = new DecoderThread();

/** `decodeCapture`, on the decoder's thread. */
export function decodeOffThread(raw: RawCapture & { body: Buffer }): Promise<unknown> {
  return thread.decode(raw);
}
