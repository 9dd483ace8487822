/**
 * The one codec of opaque `cursor` query parameters: JSON, base64url-encoded. Decoding never
 * throws; a caller checks the value's shape and answers an unreadable cursor its own way.
 */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function decodeCursor(raw: string): unknown {
  try {
    return JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}
