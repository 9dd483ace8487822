const ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v' };

/**
 * One row of COPY's text format as its column values: tab-separated, `\N` for null, backslash
 * escapes for the characters it cannot carry as they are.
 */
export function parseCopyRow(line: string): (string | null)[] {
  return line.split('\t').map((field) => {
    if (field === '\\N') return null;
    if (!field.includes('\\')) return field;
    return field.replace(/\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/g, (_, e: string) => {
      if (e[0] === 'x') return String.fromCharCode(Number.parseInt(e.slice(1), 16));
      if (/^[0-7]/.test(e)) return String.fromCharCode(Number.parseInt(e, 8));
      return ESCAPES[e] ?? e;
    });
  });
}
