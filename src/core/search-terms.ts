/** Django's smart_split: whitespace separates, but a quoted part (with backslash escapes) stays in its token. */
const TOKEN = /((?:[^\s'"]*(?:(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')[^\s'"]*)+)|\S+)/g;

/**
 * The terms of DRF's SearchFilter (`search_smart_split`): tokens split at whitespace, a token wholly in
 * quotes is one term without them, any other is split at commas. A row matches when every term does.
 */
export function searchTerms(text: string): string[] {
  const terms: string[] = [];
  for (const [raw] of text.replace(/\0/g, '').matchAll(TOKEN)) {
    const token = raw.replace(/^,+|,+$/g, '');
    const quote = token[0];
    if (token.length >= 2 && (quote === '"' || quote === "'") && token.at(-1) === quote) {
      terms.push(token.slice(1, -1).replaceAll(`\\${quote}`, quote).replaceAll('\\\\', '\\'));
    } else {
      for (const part of token.split(',')) if (part.trim()) terms.push(part.trim());
    }
  }
  return terms;
}
