import { Readable } from 'node:stream';
import { ApiError } from '../core/errors.js';

const COMMA = Buffer.from(',');
/** A reply is written in pieces of about this size, each its own turn of the event loop. */
const SLICE_BYTES = 256 * 1024;

/** The 400 of an answer over QUERY_MAX_BYTES, in PostHog's shape (ClickHouse's code for the same limit). */
export function answerTooLarge(maxBytes: number): ApiError {
  const mb = Math.round((maxBytes / 1024 / 1024) * 10) / 10;
  return ApiError.validation(
    null,
    `The query's answer is larger than ${mb} MB, the most one query may return. Select fewer or smaller ` +
      'columns, fewer rows (LIMIT), or aggregate.',
    'too_many_rows_or_bytes',
  );
}

/**
 * The rows of an answer as they stream in: each row's JSON text as PostgreSQL wrote it (never parsed
 * and written again), kept up to `limit` rows; one more row means `hasMore`. Passing `maxBytes` throws
 * the 400 at that row, so no more than the cap (and the fetch in flight) is ever held.
 */
export class AnswerRows {
  readonly rows: Buffer[] = [];
  hasMore = false;
  private bytes = 0;

  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
  ) {}

  /** Takes one row; false when no more are wanted. */
  add(json: Buffer): boolean {
    if (this.rows.length >= this.limit) {
      this.hasMore = true;
      return false;
    }
    this.bytes += json.length + 1;
    if (this.bytes > this.maxBytes) throw answerTooLarge(this.maxBytes);
    this.rows.push(json);
    return true;
  }

  get byteLength(): number {
    return this.bytes;
  }
}

/**
 * A JSON answer held as pieces: `{"<first>":[row,row,...],<rest>}`, where the rows are JSON texts and
 * `rest` the other fields. It is written to a reply as a stream of slices, never joined into one
 * string, so neither building nor sending it holds the event loop for long.
 */
export class JsonAnswer {
  constructor(
    private readonly first: string,
    private readonly rows: Buffer[],
    private readonly rest: Record<string, unknown>,
  ) {}

  /** The answer's size in bytes, as written. */
  get byteLength(): number {
    let rows = 0;
    for (const row of this.rows) rows += row.length + 1;
    return this.first.length + 8 + rows + Buffer.byteLength(JSON.stringify(this.rest));
  }

  /** The same answer with more fields after the others (a field already there is replaced). */
  with(fields: Record<string, unknown>): JsonAnswer {
    return new JsonAnswer(this.first, this.rows, { ...this.rest, ...fields });
  }

  /** The pieces in order: the head, the rows with their commas, the tail. */
  private *pieces(): Generator<Buffer> {
    yield Buffer.from(`{${JSON.stringify(this.first)}:[`);
    for (let i = 0; i < this.rows.length; i++) {
      if (i) yield COMMA;
      yield this.rows[i]!;
    }
    const tail = JSON.stringify(this.rest);
    yield Buffer.from(tail === '{}' ? ']}' : `],${tail.slice(1)}`);
  }

  /** The pieces joined into slices of about SLICE_BYTES. */
  *slices(): Generator<Buffer> {
    let batch: Buffer[] = [];
    let size = 0;
    for (const piece of this.pieces()) {
      batch.push(piece);
      size += piece.length;
      if (size >= SLICE_BYTES) {
        yield Buffer.concat(batch, size);
        batch = [];
        size = 0;
      }
    }
    if (batch.length) yield Buffer.concat(batch, size);
  }

  /** The whole answer as a stream (a Fastify reply sends it as it is). */
  stream(): Readable {
    return Readable.from(this.slices(), { objectMode: false });
  }

  /** The whole answer as one text (to store an asynchronous query's answer). */
  text(): string {
    return Buffer.concat([...this.slices()]).toString('utf8');
  }

  /** The answer as a value (tests, and callers that want the object). */
  value(): Record<string, unknown> {
    return JSON.parse(this.text()) as Record<string, unknown>;
  }
}

/**
 * A stream of JSON text given as pieces, in slices of about SLICE_BYTES of text: a long piece (an
 * answer stored as text) is cut between characters, never inside a surrogate pair.
 */
export function textStream(pieces: string[]): Readable {
  function* slices(): Generator<string> {
    for (const piece of pieces) {
      for (let at = 0; at < piece.length; ) {
        let end = Math.min(piece.length, at + SLICE_BYTES);
        const code = piece.charCodeAt(end - 1);
        if (end < piece.length && code >= 0xd800 && code <= 0xdbff) end--;
        yield piece.slice(at, end);
        at = end;
      }
    }
  }
  return Readable.from(slices(), { objectMode: false });
}
