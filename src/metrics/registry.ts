import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

/**
 * The process's metrics. Only a process with METRICS_PORT set records them (see serveMetrics), so a
 * server without metrics pays nothing per request.
 */
export const registry = new Registry();

export const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from a request arriving to its answer being sent, by operation, method and status.',
  labelNames: ['operation', 'method', 'status'] as const,
  buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const ingestedEvents = new Counter({
  name: 'posthog_ingested_events_total',
  help: 'Events stored by the capture endpoints (all projects together).',
  registers: [registry],
});

export const droppedEvents = new Counter({
  name: 'posthog_dropped_events_total',
  help: "Events of accepted capture requests that were not stored: dropped by their project's transformations.",
  registers: [registry],
});

export const refusedCaptures = new Counter({
  name: 'posthog_capture_refused_total',
  help: 'Capture requests answered with an error, by status (nothing of them was stored).',
  labelNames: ['status'] as const,
  registers: [registry],
});

export const queryWait = new Histogram({
  name: 'posthog_query_queue_wait_seconds',
  help: 'Time a Query API statement waited for a slot before it ran.',
  buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30],
  registers: [registry],
});

let enabled = false;

/** Whether this process records metrics (METRICS_PORT is set); hooks check it before recording. */
export const metricsEnabled = () => enabled;

/** Turns recording on, with the process and event-loop metrics prom-client gathers itself. */
export function enableMetrics(): void {
  if (enabled) return;
  enabled = true;
  collectDefaultMetrics({ register: registry });
}
