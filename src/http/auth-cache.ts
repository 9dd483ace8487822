import type { Database } from '../db/client.js';
import { loadPrincipal, type Principal } from '../db/queries/auth.js';

const CHANNEL = 'auth_cache_invalidate';
const TTL_MS = 5_000;

/**
 * Keeps principals for a few seconds so a warm key costs no database round trip. Any change that
 * could revoke access (a key deleted or rolled, a membership changed, an organization or project
 * deleted) clears every process's cache through NOTIFY, so revocation is immediate everywhere.
 */
export class AuthCache {
  private entries = new Map<string, { principal: Principal; expires: number }>();
  private pending = new Map<string, Promise<Principal | undefined>>();
  /** Bumped on every invalidation so a load that raced with one is not cached. */
  private generation = 0;

  constructor(private database: Database) {}

  async start(): Promise<void> {
    await this.database.listen(CHANNEL, () => {
      this.generation++;
      this.entries.clear();
    });
  }

  async get(secureValue: string): Promise<Principal | undefined> {
    const hit = this.entries.get(secureValue);
    if (hit && hit.expires > Date.now()) return hit.principal;
    // Concurrent requests with the same cold key share one load.
    const generation = this.generation;
    let load = this.pending.get(secureValue);
    if (!load) {
      load = loadPrincipal(this.database.db, secureValue).finally(() => this.pending.delete(secureValue));
      this.pending.set(secureValue, load);
    }
    const principal = await load;
    if (principal && generation === this.generation) this.entries.set(secureValue, { principal, expires: Date.now() + TTL_MS });
    else this.entries.delete(secureValue);
    return principal;
  }

  /** Call after any write that can change who may do what. */
  async invalidate(): Promise<void> {
    this.generation++;
    this.entries.clear();
    await this.database.notify(CHANNEL, '');
  }
}
