/**
 * How long one stretch of a large batch's per-event work may hold the event loop. A 20 MiB capture
 * body is tens of thousands of events: done in one go, every other request (`/_health` included)
 * waits behind it for hundreds of milliseconds.
 */
const TURN_MS = 10;

/** Resolves after the event loop has served what was waiting (I/O included). */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Calls `fn` on every item in order, letting the event loop serve other requests whenever a stretch
 * has taken longer than a turn. A batch done within one turn (every ordinary one) never waits, so
 * it runs exactly as a plain loop would.
 */
export async function eachInTurns<T>(items: readonly T[], fn: (item: T, index: number) => void): Promise<void> {
  let since = performance.now();
  for (let i = 0; i < items.length; i++) {
    fn(items[i]!, i);
    // The clock is read every 32 items: reading it is cheap, but not free.
    if ((i & 31) === 31 && performance.now() - since > TURN_MS && i + 1 < items.length) {
      await nextTurn();
      since = performance.now();
    }
  }
}

/** `items.map(fn)`, in turns. */
export async function mapInTurns<T, U>(items: readonly T[], fn: (item: T, index: number) => U): Promise<U[]> {
  const out = new Array<U>(items.length);
  await eachInTurns(items, (item, i) => (out[i] = fn(item, i)));
  return out;
}

/** `JSON.stringify(items.map(fn))`, in turns: the same text, written one item at a time. */
export async function stringifyInTurns<T>(
  items: readonly T[],
  fn: (item: T, index: number) => unknown,
): Promise<string> {
  const parts = await mapInTurns(items, (item, i) => JSON.stringify(fn(item, i) ?? null));
  return `[${parts.join(',')}]`;
}

/** A run of a batch written as a JSON array: its items `from` (inclusive) to `to` (exclusive). */
export interface JsonSlice {
  json: string;
  from: number;
  to: number;
}

/**
 * `JSON.stringify(items.map(fn))` cut into arrays of about `maxChars` characters each (an item is
 * never split, so one larger item makes a larger slice), written in turns. Each slice is written
 * only when the previous one has been taken, so a caller that sends a slice before asking for the
 * next holds one slice's text at a time, and the statement carrying it has a bounded size.
 */
export async function* jsonSlicesInTurns<T>(
  items: readonly T[],
  fn: (item: T, index: number) => unknown,
  maxChars: number,
): AsyncGenerator<JsonSlice> {
  let parts: string[] = [];
  let chars = 0;
  let from = 0;
  let since = performance.now();
  for (let i = 0; i < items.length; i++) {
    const part = JSON.stringify(fn(items[i]!, i) ?? null);
    parts.push(part);
    chars += part.length + 1;
    if (chars >= maxChars && i + 1 < items.length) {
      yield { json: `[${parts.join(',')}]`, from, to: i + 1 };
      parts = [];
      chars = 0;
      from = i + 1;
      since = performance.now();
    } else if ((i & 31) === 31 && performance.now() - since > TURN_MS && i + 1 < items.length) {
      await nextTurn();
      since = performance.now();
    }
  }
  yield { json: `[${parts.join(',')}]`, from, to: items.length };
}
