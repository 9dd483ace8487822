import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.js';
import type { CacheContext } from '../insights/cache.js';
import type { SomeHandlers } from '../http/types.js';
import { secretBox } from '../secrets/index.js';
import { sharedAsset } from './assets.js';
import { grantOpens, loadShared, requireGrant, unlockShare } from './config.js';
import { errorPage, PAGE_CSP, sharedPage } from './page.js';
import { exportedData, presentShared, viewerRange } from './present.js';
import type { SharedRows } from './queries.js';
import { settingsOf } from './settings.js';
import { prefersHtml } from './negotiate.js';

// Password attempts and reads over a viewer's own date range are throttled per share and client address
// (the app's shareUnlockLimiter and shareRangeLimiter, counted in the database for every process).

/** PostHog's cookie for an unlocked share, scoped to the share's path. */
const GRANT_COOKIE = 'posthog_sharing_token';
const GRANT_SECONDS = 24 * 60 * 60;
const ASSET_CACHE = 'public, max-age=86400';

type Req = FastifyRequest<{ Params: { access_token: string }; Querystring: { date_from?: string; date_to?: string } }>;

function cookieGrant(req: FastifyRequest): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === GRANT_COOKIE) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/** The share token a request carries: `Authorization: Bearer` (as PostHog's frontend sends it) or the cookie. */
function grantOf(req: FastifyRequest): string | undefined {
  const [scheme, token] = (req.headers.authorization ?? '').split(' ');
  if (scheme?.toLowerCase() === 'bearer' && token) return token;
  return cookieGrant(req);
}

function cacheOf(req: FastifyRequest, shared: SharedRows): CacheContext {
  return {
    engine: req.server.queries,
    asyncQueries: req.server.asyncQueries,
    organizationId: shared.organization_id,
    projectId: shared.project_id,
    timezone: shared.timezone,
  };
}

/** The share with what it shows, as the request may see it (the grant, the viewer's date range). */
async function open(req: FastifyRequest, shared: SharedRows, query: Req['query'] = (req as Req).query ?? {}) {
  if (shared.sharing.password_required) {
    await requireGrant(req.server.db, secretBox(req.server.config), shared.sharing, grantOf(req));
  }
  const range = viewerRange(settingsOf(shared.sharing.settings), query);
  if (range) await req.server.shareRangeLimiter?.hit(`${shared.sharing.id}:${req.ip}`);
  const view = await presentShared(req.server.db, shared, cacheOf(req, shared), range);
  return { view, range };
}

/** Shared answers name a secret in their URL and change when the share does: never stored by caches. */
function privateAnswer(reply: FastifyReply) {
  reply.header('cache-control', 'no-store').header('vary', 'Accept, Cookie, Authorization');
}

function html(reply: FastifyReply, status: number, body: string) {
  return reply
    .code(status)
    .header('content-security-policy', PAGE_CSP)
    .type('text/html; charset=utf-8')
    .send(body) as never;
}

/** The page a person reads: the share drawn, a password form for a protected one, or why there is nothing. */
async function page(req: Req, reply: FastifyReply) {
  privateAnswer(reply);
  try {
    const shared = await loadShared(req.server.db, req.params.access_token);
    const settings = settingsOf(shared.sharing.settings);
    const grant = grantOf(req);
    const box = secretBox(req.server.config);
    if (shared.sharing.password_required && !(await grantOpens(req.server.db, box, shared.sharing, grant))) {
      const unlock = { type: 'unlock', accessToken: shared.sharing.access_token, whitelabel: !!settings.whitelabel };
      return html(reply, 200, sharedPage('Password required', '', unlock));
    }
    const { view, range } = await open(req, shared);
    const title = view.dashboard?.name || view.insight?.name || view.insight?.derived_name || 'Shared';
    const description = view.dashboard?.description ?? view.insight?.description ?? '';
    const data = {
      ...exportedData(shared, view, range),
      ...(shared.sharing.password_required ? { shareToken: grant } : {}),
    };
    return html(reply, 200, sharedPage(title, description ?? '', data));
  } catch (err) {
    if (err instanceof ApiError && [400, 403, 404].includes(err.statusCode)) {
      return html(reply, err.statusCode, errorPage(err.statusCode, err.detail));
    }
    throw err;
  }
}

async function unlock(
  req: FastifyRequest<{ Body: { password?: unknown } | undefined }>,
  reply: FastifyReply,
  shared: SharedRows,
) {
  await req.server.shareUnlockLimiter?.hit(`${shared.sharing.id}:${req.ip}`);
  const answer = await unlockShare(req.server.db, secretBox(req.server.config), shared.sharing, req.body?.password);
  // As PostHog: the token is also an HTTP-only cookie for this share's page, so a reload stays unlocked.
  const secure = req.protocol === 'https' ? '; Secure' : '';
  reply.header(
    'set-cookie',
    `${GRANT_COOKIE}=${encodeURIComponent(answer.shareToken)}; Path=/shared/${shared.sharing.access_token}; ` +
      `Max-Age=${GRANT_SECONDS}; HttpOnly; SameSite=Lax${secure}`,
  );
  return answer;
}

/** The public side of sharing: no key; the token alone grants read access while sharing is enabled. */
export const sharedHandlers = {
  async shared_dashboard_retrieve(req, reply) {
    if (prefersHtml(req.headers.accept)) return page(req, reply);
    privateAnswer(reply);
    const { view } = await open(req, await loadShared(req.server.db, req.params.access_token));
    return (view.dashboard ?? view.insight)!;
  },

  async shared_json_retrieve(req, reply) {
    privateAnswer(reply);
    const shared = await loadShared(req.server.db, req.params.access_token);
    const { view, range } = await open(req, shared);
    return exportedData(shared, view, range);
  },

  /** PostHog's share page takes a password by POST and answers a token for the protected share. */
  async shared_dashboard_create(req, reply) {
    privateAnswer(reply);
    const shared = await loadShared(req.server.db, req.params.access_token);
    if (shared.sharing.password_required) return unlock(req, reply, shared);
    const { view } = await open(req, shared, {});
    return (view.dashboard ?? view.insight)!;
  },

  async shared_json_create(req, reply) {
    privateAnswer(reply);
    const shared = await loadShared(req.server.db, req.params.access_token);
    if (shared.sharing.password_required) return unlock(req, reply, shared);
    const { view, range } = await open(req, shared, {});
    return exportedData(shared, view, range);
  },

  async shared_assets_retrieve(req, reply) {
    const asset = sharedAsset(req.params.file);
    if (!asset) throw ApiError.notFound();
    reply.header('cache-control', ASSET_CACHE).header('etag', asset.etag);
    if (req.headers['if-none-match'] === asset.etag) return reply.code(304).send() as never;
    return reply.type(asset.type).send(asset.body) as never;
  },
} satisfies SomeHandlers;
