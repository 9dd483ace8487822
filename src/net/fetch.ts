import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { guardedAgents, type GuardedAgents } from './agents.js';
import { ConnectionFailedError } from './errors.js';
import { NetworkPolicyError, type NetworkPolicy } from './policy.js';

/** Redirects followed before a download gives up (fetch allows 20; a real archive host needs one or two). */
export const MAX_REDIRECTS = 5;

export interface GuardedFetchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  signal?: AbortSignal;
}

const agentsByPolicy = new WeakMap<NetworkPolicy, GuardedAgents>();

function agentsFor(policy: NetworkPolicy): GuardedAgents {
  let agents = agentsByPolicy.get(policy);
  if (!agents) agentsByPolicy.set(policy, (agents = guardedAgents(policy)));
  return agents;
}

/** One request, no redirects followed; connection errors are reworded by `guardedFetch`. */
function once(policy: NetworkPolicy, url: URL, init: GuardedFetchInit): Promise<http.IncomingMessage> {
  const agents = agentsFor(policy);
  const secure = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      agent: secure ? agents.https : agents.http,
      ...(init.signal ? { signal: init.signal } : {}),
    });
    req.on('response', resolve);
    req.on('error', reject);
    req.end(init.body);
  });
}

/**
 * `fetch` for tenant-supplied URLs: every connection, the first and each redirect hop, goes to an
 * address the policy allows, checked when connecting (so DNS cannot change the answer in between).
 * Redirects are followed as fetch follows them (303, and 301/302 after a POST, turn into a GET
 * without a body), at most MAX_REDIRECTS times. A refused address throws NetworkPolicyError; any other
 * failure to get an answer throws ConnectionFailedError, so what lies behind a refused or closed port
 * stays unknown to the tenant.
 */
export async function guardedFetch(
  policy: NetworkPolicy,
  input: string,
  init: GuardedFetchInit = {},
): Promise<Response> {
  let url = new URL(input);
  let request = { ...init };
  for (let hop = 0; ; hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConnectionFailedError(url.origin);
    let res: http.IncomingMessage;
    try {
      res = await once(policy, url, request);
    } catch (err) {
      // A timeout is worded like a refusal too: either would tell a filtered port from a closed one.
      if (err instanceof NetworkPolicyError) throw err;
      throw new ConnectionFailedError(url.origin);
    }
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if ([301, 302, 303, 307, 308].includes(status) && location) {
      res.resume();
      if (hop >= MAX_REDIRECTS) throw new ConnectionFailedError(`${url.origin} (too many redirects)`);
      try {
        url = new URL(location, url);
      } catch {
        throw new ConnectionFailedError(`${url.origin} (a redirect to an invalid URL)`);
      }
      const method = (request.method ?? 'GET').toUpperCase();
      if (status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST') {
        const { body: _body, ...rest } = request;
        request = { ...rest, method: 'GET', headers: withoutBodyHeaders(request.headers) };
      }
      continue;
    }
    if (status < 200 || status > 599) {
      res.destroy();
      throw new ConnectionFailedError(url.origin);
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined) for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const empty = [204, 205, 304].includes(status) || request.method === 'HEAD';
    if (empty) res.resume();
    return new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, headers });
  }
}

function withoutBodyHeaders(headers: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!headers) return headers;
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !/^content-/i.test(k)));
}
