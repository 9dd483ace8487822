import { connect, type Socket } from 'node:net';
import { ConnectionFailedError } from './errors.js';
import { NetworkPolicyError, type NetworkPolicy } from './policy.js';

export interface ConnectOptions {
  timeoutMs: number;
  /** A further refusal of a resolved address (the server's own database); checked before connecting to it. */
  refuse?: (address: string) => Error | undefined;
}

function attempt(address: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port });
    const timer = setTimeout(() => socket.destroy(new Error('timeout')), timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * A TCP connection to a tenant-supplied host, made to an address the policy allows as resolved now
 * (not as it was when the configuration was saved). `socket.host` keeps the name for TLS. A refused
 * host throws NetworkPolicyError (or `refuse`'s error); any other failure throws ConnectionFailedError
 * with the same words whatever the cause.
 */
export async function connectSocket(
  policy: NetworkPolicy,
  host: string,
  port: number,
  opts: ConnectOptions,
): Promise<Socket> {
  const target = `${host}:${port}`;
  let addresses: Awaited<ReturnType<NetworkPolicy['resolve']>>;
  try {
    addresses = await policy.resolve(host);
  } catch (err) {
    if (err instanceof NetworkPolicyError) throw err;
    throw new ConnectionFailedError(target);
  }
  for (const { address } of addresses) {
    const refusal = opts.refuse?.(address);
    if (refusal) throw refusal;
  }
  for (const { address } of addresses) {
    try {
      const socket = await attempt(address, port, opts.timeoutMs);
      return Object.assign(socket, { host });
    } catch {
      // The next address, if any.
    }
  }
  throw new ConnectionFailedError(target);
}
