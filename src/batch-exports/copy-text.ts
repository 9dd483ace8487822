/**
 * PostgreSQL's COPY text format, the wire form of record batches: one row per line, columns split
 * by tabs, and backslash escapes for backslash, tab, newline and the other control characters, so a
 * 0x0A byte only ever ends a row. Batches keep the bytes as PostgreSQL wrote them, so a PostgreSQL
 * destination takes them with COPY as they are and nothing parses rows in JavaScript.
 */

const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;

const UNESCAPE: Record<number, number> = {
  0x62: 0x08, // \b
  0x66: 0x0c, // \f
  0x6e: 0x0a, // \n
  0x72: 0x0d, // \r
  0x74: 0x09, // \t
  0x76: 0x0b, // \v
};

/** Escapes one value for a single-column COPY row (without the newline that ends it). */
export function escapeCopyText(value: string): string {
  return /[\\\n\r\t\b\f\v]/.test(value)
    ? value.replace(
        /[\\\n\r\t\b\f\v]/g,
        (c) => ({ '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f', '\v': '\\v' })[c]!,
      )
    : value;
}

/** Rows of one text column in COPY text format. */
export function encodeCopyRows(values: string[]): Buffer {
  return Buffer.from(values.map((v) => `${escapeCopyText(v)}\n`).join(''));
}

/**
 * The values of single-column COPY rows, each followed by a newline: for JSON objects, JSON lines.
 * COPY writes no octal or hex escapes, so the one-character escapes are all there is to undo.
 */
export function decodeCopyRows(data: Buffer): Buffer {
  let at = data.indexOf(BACKSLASH);
  if (at < 0) return data;
  const out = Buffer.allocUnsafe(data.length);
  let from = 0;
  let len = 0;
  while (at >= 0) {
    len += data.copy(out, len, from, at);
    const next = data[at + 1]!;
    out[len++] = UNESCAPE[next] ?? next;
    from = at + 2;
    at = data.indexOf(BACKSLASH, from);
  }
  len += data.copy(out, len, from);
  return out.subarray(0, len);
}

/** Counts the rows in COPY text data (complete rows: every row ends with a newline). */
export function countCopyRows(data: Buffer, from = 0, limit = Infinity): { rows: number; end: number } {
  let rows = 0;
  let end = from;
  while (rows < limit) {
    const at = data.indexOf(NEWLINE, end);
    if (at < 0) break;
    rows++;
    end = at + 1;
  }
  return { rows, end };
}
