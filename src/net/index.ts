// Every connection a tenant's configuration asks for (plugin downloads, batch export destinations)
// goes through here; addresses the operator configures (DATABASE_URL, EMAIL_HOST, DNS_SERVERS,
// PLUGIN_REPOSITORY_URL) do not.
import { OwnDatabase, databaseTarget } from './own-database.js';
import { networkPolicy, type NetworkPolicy } from './policy.js';

export { guardedAgents } from './agents.js';
export { ConnectionFailedError, isConnectionFailure } from './errors.js';
export { guardedFetch } from './fetch.js';
export { OwnDatabase } from './own-database.js';
export { InvalidHostError, NetworkPolicy, NetworkPolicyError, networkPolicy, parseAllowList } from './policy.js';
export { connectSocket } from './socket.js';

/** What tenant-supplied connections may reach, and the one database they never may. */
export interface TenantNetwork {
  policy: NetworkPolicy;
  ownDatabase: OwnDatabase;
}

export function tenantNetwork(allowList: readonly string[], ownDatabaseUrl: string | undefined): TenantNetwork {
  return { policy: networkPolicy(allowList), ownDatabase: new OwnDatabase(databaseTarget(ownDatabaseUrl)) };
}
