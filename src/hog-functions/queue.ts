import type { PgBoss } from 'pg-boss';
import { traceCarrier, type TraceCarrier } from '../core/tracing.js';
import type { EventInput } from './globals.js';

/**
 * Jobs of destination deliveries. One job carries up to DELIVERIES_PER_JOB deliveries of one function
 * (an ingested batch's matching events, or a page of a replay), so the queue's cost (insert, fetch,
 * complete) and the worker's reads and writes are paid once per job, not once per event. Each delivery
 * is attempted up to DELIVERY_ATTEMPTS times: the worker queues the retryable failures of a job as a new
 * job, after a growing pause. The queue's own retries cover a job that failed as a whole (a worker that
 * died, a database error): it is run again, at least once being the promise.
 */
export const DELIVERY_QUEUE = 'hog-function-delivery';
export const DELIVERY_ATTEMPTS = 3;
export const DELIVERIES_PER_JOB = 100;

/** One event to deliver through a function. */
export interface Delivery {
  event: EventInput;
  /** The destination's mapping (its index) whose inputs this delivery uses, for a function with mappings. */
  mapping?: number;
  /** This delivery's attempt, 1 to DELIVERY_ATTEMPTS (1 when absent). */
  attempt?: number;
  /** The invocation id its log lines carry, the same on every attempt. */
  invocation?: string;
}

export interface DeliveryJob {
  function_id: string;
  project_id: number;
  deliveries: Delivery[];
  /** Set when the job comes from a replay, whose progress it counts. */
  replay_id?: string;
  /** The trace of the request that queued it, when tracing is on. */
  trace?: TraceCarrier;
}

/** A job queued before deliveries were batched: one event. */
interface SingleDeliveryJob {
  function_id: string;
  project_id: number;
  event: EventInput;
  mapping?: number;
  replay_id?: string;
  trace?: TraceCarrier;
}

/** What the worker runs from a job's data, whichever shape queued it. */
export function deliveriesOf(data: DeliveryJob | SingleDeliveryJob): Delivery[] {
  if ('deliveries' in data && Array.isArray(data.deliveries)) return data.deliveries;
  const single = data as SingleDeliveryJob;
  return [{ event: single.event, ...(single.mapping === undefined ? {} : { mapping: single.mapping }) }];
}

/** One delivery to make, before it is packed into a job. */
export interface QueuedDelivery extends Delivery {
  function_id: string;
  project_id: number;
  replay_id?: string;
}

const ready = new WeakMap<PgBoss, Promise<void>>();

/** Creates the queue once per job engine: a failed job is run again with a growing back-off, woken by NOTIFY. */
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

/** Packs deliveries into jobs: one function's (and one replay's) together, at most DELIVERIES_PER_JOB each. */
export function packDeliveries(deliveries: QueuedDelivery[]): DeliveryJob[] {
  const groups = new Map<string, DeliveryJob[]>();
  const jobs: DeliveryJob[] = [];
  for (const { function_id, project_id, replay_id, ...delivery } of deliveries) {
    const key = `${function_id} ${replay_id ?? ''}`;
    const open = groups.get(key) ?? [];
    let job = open[open.length - 1];
    if (!job || job.deliveries.length >= DELIVERIES_PER_JOB) {
      job = { function_id, project_id, deliveries: [], ...(replay_id ? { replay_id } : {}) };
      open.push(job);
      groups.set(key, open);
      jobs.push(job);
    }
    job.deliveries.push(delivery);
  }
  return jobs;
}

export async function enqueueDeliveries(
  boss: PgBoss,
  retryDelaySeconds: number,
  deliveries: QueuedDelivery[],
  startAfter?: Date,
) {
  if (!deliveries.length) return;
  await deliveryQueue(boss, retryDelaySeconds);
  const trace = traceCarrier();
  const rows = packDeliveries(deliveries).map((data) => ({
    data: trace ? { ...data, trace } : data,
    group: { id: data.function_id },
    ...(startAfter ? { startAfter } : {}),
  }));
  for (let i = 0; i < rows.length; i += 100) await boss.insert(DELIVERY_QUEUE, rows.slice(i, i + 100));
}
