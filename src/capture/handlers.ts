import type { SomeHandlers, RequestOf } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { normalizeEvents, readPayload } from './normalize.js';
import { eachInTurns } from '../core/turns.js';
import { ingest, projectByToken } from './ingest.js';
import { ingestThroughHogFunctions } from '../hog-functions/pipeline.js';
import { droppedEvents, ingestedEvents, metricsEnabled } from '../metrics/registry.js';

// PostHog's capture wording; its clients show these to developers setting up an SDK.
const MISSING_KEY = 'API key not provided. You can find your project API key in PostHog project settings.';
const INVALID_KEY = 'Project API key invalid. You can find your project API key in PostHog project settings.';

/** One handler for every capture path: the body arrives decoded by the capture routes' own parser. */
async function capture(req: RequestOf<'capture_batch_create'>) {
  const now = req.receivedAt ?? new Date();
  const { token, events, sentAt } = readPayload(req.body, req.query as Record<string, unknown>);
  if (!token) throw new ApiError(401, 'authentication_error', 'missing_api_key', MISSING_KEY);
  const project = await projectByToken(req.server.db, token);
  if (!project) throw new ApiError(401, 'authentication_error', 'invalid_api_key', INVALID_KEY);
  const batch = await normalizeEvents(events, sentAt, now);
  // PostHog records the sender's address on every event, unless the project anonymises addresses.
  // `req.ip` is worked out on every read: once per request, not per event.
  const ip = req.ip;
  await eachInTurns(batch, (e) => {
    if (project.anonymize_ips) delete e.properties.$ip;
    else e.properties.$ip ??= ip;
  });
  let stored = 0;
  await ingestThroughHogFunctions(req.server, project, batch, async (kept) => {
    await ingest(req.server.db, project, kept, now);
    stored = kept.length;
  });
  if (metricsEnabled()) {
    ingestedEvents.inc(stored);
    droppedEvents.inc(batch.length - stored);
  }
  return { status: 1 as const };
}

/**
 * `/s/`: recordings are off here (remote config says so), so snapshots a client still sends are
 * checked like any capture request and then dropped; PostHog's capture accepts them the same way.
 */
async function recordings(req: RequestOf<'capture_s_create'>) {
  const { token } = readPayload(req.body, req.query as Record<string, unknown>);
  if (!token) throw new ApiError(401, 'authentication_error', 'missing_api_key', MISSING_KEY);
  if (!(await projectByToken(req.server.db, token))) {
    throw new ApiError(401, 'authentication_error', 'invalid_api_key', INVALID_KEY);
  }
  return { status: 1 as const };
}

export const captureHandlers = {
  capture_batch_create: capture,
  capture_create: capture,
  capture_e_create: capture,
  capture_i_v0_e_create: capture,
  capture_s_create: recordings,
} satisfies SomeHandlers;
