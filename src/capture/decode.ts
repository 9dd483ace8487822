import { gunzipSync } from 'node:zlib';
import { ApiError } from '../core/errors.js';

/** Bodies and what they decompress to are both capped, so a small gzip cannot inflate without bound. */
export const CAPTURE_BODY_LIMIT = 20 * 1024 * 1024;

export interface RawCapture {
  body: Buffer | undefined;
  contentType: string | undefined;
  contentEncoding: string | undefined;
  /** The `compression` query parameter. */
  compression: string | undefined;
}

export function malformed(reason: string): ApiError {
  return new ApiError(400, 'validation_error', 'invalid_payload', `Malformed request data: ${reason}`);
}

export function noData(): ApiError {
  return new ApiError(
    400,
    'validation_error',
    'invalid_payload',
    'No data found. Make sure to use a POST request when sending the payload in the body of the request.',
  );
}

export function tooLarge(): ApiError {
  return new ApiError(413, 'invalid_request', 'request_too_large', 'Request body is too large.');
}

const isGzip = (b: Buffer) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;

/**
 * Thrown by an in-place decode whose inflated body would pass `inflateLimit`: the body goes to the
 * decoder's thread instead. Inflation stops as the limit is crossed (zlib's maxOutputLength), so
 * no more than the limit is ever inflated on the caller's thread.
 */
export class InflatesTooFar extends Error {
  constructor() {
    super('The body inflates past what is decoded in place');
  }
}

/**
 * Inflates every gzip member (a body may hold several; its trailer only tells the last one's size)
 * and stops as soon as the output passes `limit`.
 */
function gunzip(data: Buffer, limit: number): Buffer {
  try {
    return gunzipSync(data, { maxOutputLength: limit });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw limit < CAPTURE_BODY_LIMIT ? new InflatesTooFar() : tooLarge();
    }
    throw malformed('the body is not valid gzip.');
  }
}

interface Decoded {
  doc: unknown;
  /** The length of the JSON text it was parsed from. */
  bytes: number;
}

function parseJson(data: Buffer): Decoded {
  return { doc: JSON.parse(data.toString('utf8')), bytes: data.length };
}

/** Standard or URL-safe base64, with the `+` that form decoding turned into a space put back. */
function fromBase64(text: string): Buffer | undefined {
  const cleaned = text.trim().replace(/ /g, '+').replace(/-/g, '+').replace(/_/g, '/').replace(/\s+/g, '');
  if (!cleaned || !/^[A-Za-z0-9+/]+=*$/.test(cleaned)) return undefined;
  return Buffer.from(cleaned, 'base64');
}

/**
 * How deeply a capture body may nest, as in PostHog's capture, whose JSON parser (serde_json) stops
 * at 128 levels. Deeper documents would exhaust the stack of every step that walks them
 * (sanitising, serialising to jsonb), so they are refused before any of those.
 */
export const CAPTURE_MAX_DEPTH = 128;

/** Walks the document without recursion: its depth is what is being checked. */
function withinDepth(doc: unknown): unknown {
  const stack: [unknown, number][] = [[doc, 1]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (!value || typeof value !== 'object') continue;
    if (depth > CAPTURE_MAX_DEPTH) throw malformed(`the body is nested more than ${CAPTURE_MAX_DEPTH} levels deep.`);
    for (const child of Object.values(value)) if (child && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return doc;
}

/**
 * Turns a capture request's bytes into its JSON payload the way PostHog's SDKs encode it: plain JSON
 * (any content type, posthog-js uses text/plain), gzip whether or not a header or `?compression=`
 * says so (recognised by its magic bytes), a form with `data=` holding JSON or base64 of it (or of its
 * gzip), or a bare base64 body.
 */
export function decodeCapture(raw: RawCapture, inflateLimit = CAPTURE_BODY_LIMIT): unknown {
  return decodeCaptureSized(raw, inflateLimit).doc;
}

/**
 * `decodeCapture`, with the size of the JSON text the document came from. With an `inflateLimit`
 * under the capture cap, a body that inflates past it throws `InflatesTooFar` once that much is inflated.
 */
export function decodeCaptureSized(raw: RawCapture, inflateLimit = CAPTURE_BODY_LIMIT): Decoded {
  const decoded = decodeBody(raw, Math.min(inflateLimit, CAPTURE_BODY_LIMIT));
  withinDepth(decoded.doc);
  return decoded;
}

function decodeBody(raw: RawCapture, inflateLimit: number): Decoded {
  let data = raw.body;
  if (!data || data.length === 0) throw noData();
  let compression = (raw.compression ?? '').toLowerCase();
  if (/^application\/x-www-form-urlencoded/i.test(raw.contentType ?? '')) {
    const form = new URLSearchParams(data.toString('utf8'));
    const field = form.get('data');
    if (!field) throw noData();
    compression ||= (form.get('compression') ?? '').toLowerCase();
    data = Buffer.from(field, 'utf8');
  }
  if (compression === 'lz64') throw malformed('lz64 compression is not supported; send gzip or base64.');
  const declaredGzip = compression === 'gzip' || compression === 'gzip-js' || /gzip/i.test(raw.contentEncoding ?? '');
  // The magic bytes decide: a declared compression that the bytes do not show is not trusted.
  if (isGzip(data)) data = gunzip(data, inflateLimit);

  try {
    return parseJson(data);
  } catch {
    // Not JSON: PostHog's older SDKs send base64 of the JSON (or of its gzip).
  }
  const decoded = fromBase64(data.toString('latin1'));
  if (decoded) {
    const inner = isGzip(decoded) ? gunzip(decoded, inflateLimit) : decoded;
    try {
      return parseJson(inner);
    } catch {
      // fall through to the error below
    }
  }
  throw malformed(declaredGzip ? 'the body is not valid gzip.' : 'the body is neither JSON nor base64-encoded JSON.');
}
