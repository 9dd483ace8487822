import http from 'node:http';
import https from 'node:https';
import { isIP, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { NetworkPolicyError, type NetworkPolicy } from './policy.js';

/** A socket that fails with `err` as soon as it is used, having sent nothing anywhere. */
function refused(err: Error): Socket {
  const socket = new Socket();
  process.nextTick(() => socket.destroy(err));
  return socket;
}

/**
 * Node connects to an IP address without calling `lookup`, so an address written in the URL is
 * checked here; names go through the policy's `lookup`, at every connection.
 */
function guard(policy: NetworkPolicy, options: { host?: string | null | undefined }): NetworkPolicyError | undefined {
  const host = (options.host ?? '').replace(/^\[|\]$/g, '');
  return isIP(host) && !policy.allows(host) ? new NetworkPolicyError(host) : undefined;
}

export interface GuardedAgents {
  http: http.Agent;
  https: https.Agent;
}

/** An http and an https agent whose every connection (and so every redirect hop) obeys `policy`. */
export function guardedAgents(policy: NetworkPolicy, options: http.AgentOptions = {}): GuardedAgents {
  class HttpAgent extends http.Agent {
    override createConnection(
      opts: http.ClientRequestArgs,
      cb?: (err: Error | null, s: Duplex) => void,
    ): Duplex | null | undefined {
      const refusal = guard(policy, opts);
      if (refusal) return refused(refusal);
      return super.createConnection({ ...opts, lookup: policy.lookup }, cb);
    }
  }
  class HttpsAgent extends https.Agent {
    override createConnection(
      opts: https.RequestOptions,
      cb?: (err: Error | null, s: Duplex) => void,
    ): Duplex | null | undefined {
      const refusal = guard(policy, opts);
      if (refusal) return refused(refusal);
      return super.createConnection({ ...opts, lookup: policy.lookup }, cb);
    }
  }
  return { http: new HttpAgent(options), https: new HttpsAgent(options) };
}
