import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SomeHandlers } from '../http/types.js';
import { ApiError } from '../core/errors.js';
import { decideConfig, remoteConfig, remoteConfigScript } from './config.js';
import { SDK_VERSION, sdkAsset } from '../capture/sdk-assets.js';
import { remoteConfigProject, type RemoteConfigProject } from './queries.js';

// The flags service's wording for a request without a token and for a token no project has.
const NO_TOKEN = 'No API token provided. Please include a valid API token in your request.';
const BAD_TOKEN = 'The provided API key is invalid or has expired. Please check your API key and try again.';
export const missingToken = () => new ApiError(401, 'authentication_error', 'missing_api_key', NO_TOKEN);
export const invalidToken = () => new ApiError(401, 'authentication_error', 'invalid_api_key', BAD_TOKEN);
// PostHog's surveys endpoint words its token errors as capture does.
const SURVEYS_NO_TOKEN = 'API key not provided. You can find your project API key in your PostHog project settings.';
const SURVEYS_BAD_TOKEN =
  'Project API key invalid. You can find your project API key in your PostHog project settings.';
const JS = 'application/javascript; charset=utf-8';
/** The bundles change only with the installed version, which their ETag names. */
const ASSET_CACHE = 'public, max-age=3600';
/** A versioned path names its content for good. */
const VERSIONED_CACHE = 'public, max-age=86400, immutable';

const nonEmpty = (v: unknown) => (typeof v === 'string' && v ? v : undefined);

/** The project of the token a flags request names in its body (or, failing that, its query). */
async function flagsProject(req: FastifyRequest): Promise<RemoteConfigProject> {
  const body =
    req.body && typeof req.body === 'object' && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : {};
  const query = req.query as Record<string, unknown>;
  const token = nonEmpty(body.token) ?? nonEmpty(body.api_key) ?? nonEmpty(query.token) ?? nonEmpty(query.api_key);
  if (!token) throw missingToken();
  const project = await remoteConfigProject(req.server.db, token);
  if (!project) throw invalidToken();
  return project;
}

async function tokenProject(req: FastifyRequest<{ Params: { token: string } }>): Promise<RemoteConfigProject> {
  const project = await remoteConfigProject(req.server.db, req.params.token);
  if (!project) throw ApiError.notFound();
  return project;
}

const version = (req: FastifyRequest) => {
  const v = Number((req.query as Record<string, unknown>).v);
  return Number.isFinite(v) ? v : 1;
};
const wantsConfig = (req: FastifyRequest) =>
  ['true', '1'].includes(String((req.query as Record<string, unknown>).config));

/**
 * `/flags/`: no flags exist here, so every answer is empty, in the shape the version asks for
 * (v2: `flags` with details; older: `featureFlags` and payloads), with the config on `config=true`.
 */
async function flags(req: FastifyRequest) {
  const project = await flagsProject(req);
  const config = wantsConfig(req) ? decideConfig(project) : {};
  const common = { errorsWhileComputingFlags: false, requestId: randomUUID() };
  if (version(req) >= 2) return { ...common, flags: {}, ...config };
  return { ...common, featureFlags: {}, featureFlagPayloads: {}, ...config };
}

/** `/decide/`, the flags service's legacy shapes by version, always with the config. */
async function decide(req: FastifyRequest) {
  const project = await flagsProject(req);
  const config = decideConfig(project);
  const requestId = randomUUID();
  const v = version(req);
  if (v >= 4) return { errorsWhileComputingFlags: false, flags: {}, requestId, ...config };
  if (v === 3)
    return { errorsWhileComputingFlags: false, featureFlags: {}, featureFlagPayloads: {}, requestId, ...config };
  if (v === 2) return { featureFlags: {}, requestId, ...config };
  return { featureFlags: [], requestId, ...config };
}

/** `/api/surveys/`: PostHog's answer for a project without surveys. */
async function surveys(req: FastifyRequest) {
  const token = nonEmpty((req.query as Record<string, unknown>).token);
  if (!token) throw new ApiError(401, 'authentication_error', 'missing_api_key', SURVEYS_NO_TOKEN);
  if (!(await remoteConfigProject(req.server.db, token))) {
    throw new ApiError(401, 'authentication_error', 'invalid_api_key', SURVEYS_BAD_TOKEN);
  }
  return { surveys: [], survey_config: null };
}

function script(reply: FastifyReply, body: string | Buffer) {
  return reply.type(JS).send(body);
}

export const remoteConfigHandlers = {
  flags_retrieve: flags,
  flags_create: flags,
  decide_retrieve: decide,
  decide_create: decide,
  surveys_retrieve: surveys,

  async array_config_retrieve(req) {
    return remoteConfig(await tokenProject(req));
  },

  async array_config_js_retrieve(req, reply) {
    return script(reply, remoteConfigScript(await tokenProject(req)));
  },

  async array_js_retrieve(req, reply) {
    const project = await tokenProject(req);
    return script(reply, `${sdkAsset('array.js')!.toString('utf8')}\n\n${remoteConfigScript(project)}`);
  },

  async static_retrieve(req, reply) {
    const body = sdkAsset(req.params.file);
    if (!body) throw ApiError.notFound();
    const etag = `"posthog-js-${SDK_VERSION}-${req.params.file}"`;
    reply.header('cache-control', ASSET_CACHE).header('etag', etag);
    if (req.headers['if-none-match'] === etag) return reply.code(304).send();
    return script(reply, body);
  },

  async static_versioned_retrieve(req, reply) {
    const body = req.params.version === SDK_VERSION ? sdkAsset(req.params.file) : undefined;
    if (!body) throw ApiError.notFound();
    reply.header('cache-control', VERSIONED_CACHE);
    return script(reply, body);
  },
} satisfies SomeHandlers;
