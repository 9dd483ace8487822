import type { PgBoss } from 'pg-boss';
import { traceCarrier, type TraceCarrier } from '../core/tracing.js';
import type { EventInput } from './globals.js';

/** One job per (destination, event): delivered at least once, attempted 3 times in all. */
export const DELIVERY_QUEUE = 'hog-function-delivery';
export const DELIVERY_ATTEMPTS = 3;

export interface DeliveryJob {
  function_id: string;
  project_id: number;
  event: EventInput;
  /** Set when the job comes from a replay, whose progress it counts. */
  replay_id?: string;
  /** The destination's mapping (its index) whose inputs this delivery uses, for a function with mappings. */
  mapping?: number;
  /** The trace of the request that queued it, when tracing is on. */
  trace?: TraceCarrier;
}

const ready = new WeakMap<PgBoss, Promise<void>>();

/** Creates the queue once per job engine: retries with a growing back-off, woken by NOTIFY. */
export function deliveryQueue(boss: PgBoss, retryDelaySeconds: number): Promise<void> {
  let done = ready.get(boss);
  if (!done) {
    done = boss
      .createQueue(DELIVERY_QUEUE, {
        retryLimit: DELIVERY_ATTEMPTS - 1,
        retryDelay: retryDelaySeconds,
        retryBackoff: true,
        expireInSeconds: 120,
        retentionSeconds: 7 * 24 * 3600,
        deleteAfterSeconds: 24 * 3600,
        notify: true,
      })
      .catch((err) => {
        ready.delete(boss);
        throw err;
      });
    ready.set(boss, done);
  }
  return done;
}

export async function enqueueDeliveries(boss: PgBoss, retryDelaySeconds: number, jobs: DeliveryJob[]) {
  if (!jobs.length) return;
  await deliveryQueue(boss, retryDelaySeconds);
  const trace = traceCarrier();
  const rows = jobs.map((data) => ({ data: trace ? { ...data, trace } : data, group: { id: data.function_id } }));
  for (let i = 0; i < rows.length; i += 500) await boss.insert(DELIVERY_QUEUE, rows.slice(i, i + 500));
}
