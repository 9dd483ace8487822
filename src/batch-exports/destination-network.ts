import type { Socket } from 'node:net';
import { ApiError } from '../core/errors.js';
import { connectSocket, InvalidHostError, NetworkPolicyError, OwnDatabase, type TenantNetwork } from '../net/index.js';
import type { DestinationType } from './destination-config.js';
import { NonRetryableError } from './destinations/types.js';

const attr = (field: string) => `destination__config__${field}`;
const PG_CONNECT_TIMEOUT_MS = 10_000;

function checkHost(network: TenantNetwork, field: string, host: string): void {
  try {
    network.policy.checkLiteral(host);
  } catch (err) {
    if (err instanceof NetworkPolicyError || err instanceof InvalidHostError)
      throw ApiError.validation(attr(field), err.message);
    throw err;
  }
}

const hostOf = (url: string) => new URL(url).hostname;

/**
 * The saving half of the network policy: a destination that names a refused address outright (in any
 * of its written forms) is a 400 on that field, as is a Postgres destination that leads to the server's
 * own database. Names are resolved again at every connection, which is where they are really checked.
 * Runs after `validateDestinationConfig`, on the complete config.
 */
export async function checkDestinationNetwork(
  type: DestinationType,
  config: Record<string, unknown>,
  network: TenantNetwork,
): Promise<void> {
  if (type === 'HTTP' && typeof config.url === 'string') checkHost(network, 'url', hostOf(config.url));
  if (type === 'S3' && typeof config.endpoint_url === 'string' && config.endpoint_url) {
    checkHost(network, 'endpoint_url', hostOf(config.endpoint_url));
  }
  if (type === 'Postgres' && typeof config.host === 'string') {
    checkHost(network, 'host', config.host);
    const port = Number(config.port ?? 5432);
    if (await network.ownDatabase.isOwn(config.host, port, String(config.database))) {
      throw ApiError.validation(attr('host'), OwnDatabase.message);
    }
  }
}

/**
 * postgres.js's `socket` option for a Postgres destination: every connection goes to an address the
 * policy allows as resolved at that moment, and never to the server's own database. Refusals fail the
 * run at once; other failures are retried, worded alike.
 */
export async function pgSocket(
  network: TenantNetwork,
  config: { host: unknown; port?: unknown; database: unknown },
): Promise<() => Promise<Socket>> {
  const host = String(config.host);
  const port = Number(config.port ?? 5432);
  const own = await network.ownDatabase.matcher(port, String(config.database));
  const refuse = (address: string) => (own?.(address) ? new NonRetryableError(OwnDatabase.message) : undefined);
  return () =>
    connectSocket(network.policy, host, port, { timeoutMs: PG_CONNECT_TIMEOUT_MS, refuse }).catch((err: unknown) => {
      if (err instanceof NetworkPolicyError || err instanceof InvalidHostError)
        throw new NonRetryableError(err.message);
      throw err;
    });
}
