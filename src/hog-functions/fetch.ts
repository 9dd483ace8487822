import http from 'node:http';
import https from 'node:https';
import { guardedAgents, NetworkPolicyError, type NetworkPolicy } from '../net/index.js';

type GuardedAgents = ReturnType<typeof guardedAgents>;
import { RetryableFetchError, type FetchResponse, type HogFetch } from './execute.js';

/** PostHog's CDP fetch rules: these statuses (and timeouts) are attempted again, nothing else. */
export const RETRYABLE_STATUSES = new Set([408, 429, 500, 502, 503, 504]);
export const FETCH_TIMEOUT_MS = 10_000;
/** The most of a response body read back into Hog; the rest is dropped. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

type Json = Record<string, unknown>;
const agentsByPolicy = new WeakMap<NetworkPolicy, GuardedAgents>();

function agentsFor(policy: NetworkPolicy): GuardedAgents {
  let agents = agentsByPolicy.get(policy);
  if (!agents) agentsByPolicy.set(policy, (agents = guardedAgents(policy, { keepAlive: true })));
  return agents;
}

function requestBody(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  return typeof body === 'string' ? body : JSON.stringify(body);
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Hog's `fetch` for deliveries: one request through the tenant network policy (SSRF rules and
 * ALLOW_PRIVATE_NETWORKS), no redirects followed (a 3xx comes back to the program as it is), a
 * timeout, and at most MAX_RESPONSE_BYTES of body. A retryable status, a timeout or a failed
 * connection throws RetryableFetchError so the job is attempted again; a refused address does not.
 */
export function deliveryFetch(
  policy: NetworkPolicy,
  onRequest?: (url: string, status: number | string) => void,
): HogFetch {
  return async (url, init) => {
    const target = new URL(url);
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error(`Unsupported URL: ${url}`);
    const secure = target.protocol === 'https:';
    const agents = agentsFor(policy);
    const method = String(init.method ?? 'GET').toUpperCase();
    const headers = Object.fromEntries(
      Object.entries((init.headers ?? {}) as Json).map(([k, v]) => [k, String(v)]),
    ) as Record<string, string>;
    const body = requestBody(init.body);
    let res: FetchResponse;
    try {
      res = await new Promise<FetchResponse>((resolve, reject) => {
        const req = (secure ? https : http).request(target, {
          method,
          headers,
          agent: secure ? agents.https : agents.http,
          timeout: FETCH_TIMEOUT_MS,
        });
        const timedOut = () => req.destroy(new RetryableFetchError(`Request to ${target.origin} timed out`));
        // The socket timeout only notices silence; a server sending a byte now and then is stopped here.
        const deadline = setTimeout(timedOut, FETCH_TIMEOUT_MS);
        req.on('close', () => clearTimeout(deadline));
        req.on('timeout', timedOut);
        req.on('error', reject);
        req.on('response', (r) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const done = () =>
            resolve({ status: r.statusCode ?? 0, body: parsed(Buffer.concat(chunks).toString('utf8')) });
          r.on('data', (c: Buffer) => {
            chunks.push(c.subarray(0, MAX_RESPONSE_BYTES - size));
            size += c.length;
            // Past the cap nothing more is read: the answer is what arrived, the connection is dropped.
            if (size >= MAX_RESPONSE_BYTES) {
              done();
              r.destroy();
            }
          });
          r.on('end', done);
          r.on('error', reject);
        });
        req.end(body);
      });
    } catch (err) {
      onRequest?.(url, 'error');
      if (err instanceof NetworkPolicyError) throw new Error(`Refused: ${err.message}`);
      if (err instanceof RetryableFetchError) throw err;
      throw new RetryableFetchError(`Request to ${target.origin} failed: ${(err as Error).message}`);
    }
    onRequest?.(url, res.status);
    if (RETRYABLE_STATUSES.has(res.status)) throw new RetryableFetchError(`${target.origin} answered ${res.status}`);
    return res;
  };
}

/** `fetch` for test invocations with mock_async_functions: nothing is sent, the call is logged and answered 200. */
export function mockFetch(log: (message: string) => void): HogFetch {
  return async (url, init) => {
    log(`Async function 'fetch' was mocked with arguments: ${JSON.stringify([url, init])}`);
    return { status: 200, body: {} };
  };
}
