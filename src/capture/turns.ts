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
