import { ApiError } from './errors.js';

/** PostgreSQL refuses it in text; DRF answers it with the message below. */
export const NUL = '\u0000';

export function nullCharacters(attr: string | null): ApiError {
  return ApiError.validation(attr, 'Null characters are not allowed.', 'null_characters_not_allowed');
}

/**
 * Refuses NUL in any key or string of a value parsed from JSON inside a query parameter (`\u0000`
 * passes the raw check in guardInput as six plain characters). Walked without recursion.
 */
export function rejectNulInJson(attr: string, value: unknown): void {
  const stack = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.includes(NUL)) throw nullCharacters(attr);
    } else if (v && typeof v === 'object') {
      for (const [key, child] of Object.entries(v)) {
        if (key.includes(NUL)) throw nullCharacters(attr);
        stack.push(child);
      }
    }
  }
}
