// The capture decoder's thread (started by decode-thread.ts): large capture bodies are inflated,
// parsed and depth-checked here, so that the server's event loop keeps serving other requests.
import { parentPort, type MessagePort } from 'node:worker_threads';
import { decodeCaptureSized, type RawCapture } from './decode.js';
import { ApiError } from '../core/errors.js';

export interface DecodeRequest {
  id: number;
  raw: Omit<RawCapture, 'body'> & { body: Uint8Array };
  /** Where the decoded events go, in slices the server takes one per turn of its event loop. */
  slices: MessagePort;
  /** About how many bytes of JSON each slice should carry. */
  sliceBytes: number;
}

export type DecodeAnswer =
  | { id: number; slices: number; envelope: Record<string, unknown> | null }
  | { id: number; whole: unknown }
  | { id: number; apiError: Pick<ApiError, 'statusCode' | 'type' | 'code' | 'detail' | 'attr'> }
  | { id: number; failure: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The decoded document: its list of events (a bare array, or an object's `batch`) goes in slices
 * through the request's port, the rest (the envelope, with `batch` emptied) in the answer. A
 * document of another shape is one event at most, and goes whole.
 */
function answer(req: DecodeRequest): DecodeAnswer {
  const body = Buffer.from(req.raw.body.buffer, req.raw.body.byteOffset, req.raw.body.byteLength);
  let doc: unknown;
  let bytes: number;
  try {
    ({ doc, bytes } = decodeCaptureSized({ ...req.raw, body }));
  } catch (err) {
    if (err instanceof ApiError) {
      const { statusCode, type, code, detail, attr } = err;
      return { id: req.id, apiError: { statusCode, type, code, detail, attr } };
    }
    return { id: req.id, failure: String((err as Error)?.message ?? err) };
  }
  let events: unknown[];
  let envelope: Record<string, unknown> | null = null;
  if (Array.isArray(doc)) events = doc;
  else if (isObject(doc) && Array.isArray(doc.batch)) {
    events = doc.batch;
    envelope = doc;
    envelope.batch = [];
  } else return { id: req.id, whole: doc };
  const count = Math.max(1, Math.min(events.length, Math.ceil(bytes / req.sliceBytes)));
  const per = Math.ceil(events.length / count);
  let sent = 0;
  // The port is left open: the server closes it once it has taken every slice.
  for (let from = 0; from < events.length; from += per, sent++) req.slices.postMessage(events.slice(from, from + per));
  return { id: req.id, slices: sent, envelope };
}

parentPort!.on('message', (req: DecodeRequest) => parentPort!.postMessage(answer(req)));
