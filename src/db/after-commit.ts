import type { Db, Tx } from './client.js';

/** Something a workflow does once its writes are durable: queue a job, send mail. */
export type Effect = () => void | Promise<void>;

/** The effects registered in each open transaction (a savepoint has its own list until it is released). */
const pending = new WeakMap<object, Effect[]>();

/**
 * Runs `fn` in a transaction of `db` (a savepoint when `db` is itself one opened here), and the effects it
 * registers with `afterCommit` once the outermost transaction has committed, in order, before returning.
 * A transaction or savepoint that rolls back drops its effects: they never run.
 */
export async function transaction<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  const outer = pending.get(db);
  const effects: Effect[] = [];
  const result = await db.transaction(async (tx) => {
    pending.set(tx, effects);
    const value = await fn(tx);
    // Released into the enclosing transaction: they run when it commits, and not if it rolls back.
    if (outer) outer.push(...effects);
    return value;
  });
  if (!outer) for (const effect of effects) await effect();
  return result;
}

/** Registers `effect` to run once the transaction `tx` (opened by `transaction`) has committed. */
export function afterCommit(tx: Tx, effect: Effect): void {
  const effects = pending.get(tx);
  if (!effects) throw new Error('afterCommit needs a transaction opened by transaction()');
  effects.push(effect);
}
