import { randomUUID } from 'node:crypto';
import type { Database } from '../db/client.js';
import { countListeners, loadPrincipal, type Principal } from './queries.js';

const CHANNEL = 'auth_cache_invalidate';
/** Each process answers another's invalidation here once its cache is clear. */
const ACK_CHANNEL = 'auth_cache_cleared';
const TTL_MS = 5_000;
/** The longest a revoking call waits for the other processes to answer (then it answers anyway). */
const ECHO_WAIT_MS = 2_000;
/** How long a notification is retried after the write it announces has committed. */
const NOTIFY_RETRY_MS = 3_000;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Keeps principals for a few seconds so a warm key costs no database round trip. Any change that
 * could revoke access (a key deleted or rolled, a membership changed, an organization or project
 * deleted) clears every process's cache through NOTIFY, sent by the database's trigger on the tables a
 * principal is read from (drizzle/0019_access_changes.sql), so no write has to remember it:
 *
 * - the revoking call returns only once every process listening on the database has answered that
 *   its cache is clear (or after a bound, for a process that died without closing its connection);
 * - a process whose LISTEN connection dropped (and so may have missed notifications) clears its
 *   cache when the connection is listening again.
 */
export class AuthCache {
  private entries = new Map<string, { principal: Principal; expires: number }>();
  private pending = new Map<string, Promise<Principal | undefined>>();
  /** Bumped on every invalidation so a load that raced with one is not cached. */
  private generation = 0;
  private readonly id = randomUUID();
  private sent = 0;
  private echoes = new Map<string, (from: string) => void>();
  private listening = false;

  constructor(private database: Database) {}

  async start(): Promise<void> {
    // A transaction of this process that changed who may do what (a key, a membership, a user, an
    // organization or a project; the database's trigger marks it) invalidates before its caller goes on.
    this.database.onAccessChange(() => this.invalidate());
    await this.database.listen(ACK_CHANNEL, (payload) => {
      const sep = payload.lastIndexOf('|');
      this.echoes.get(payload.slice(0, sep))?.(payload.slice(sep + 1));
    });
    await this.database.listen(
      CHANNEL,
      (payload) => {
        this.clear();
        if (payload.startsWith(`${this.id}:`)) this.echoes.get(payload)?.(this.id);
        else if (payload) void this.database.notify(ACK_CHANNEL, `${payload}|${this.id}`).catch(() => {});
      },
      // Called again after every reconnect: what was missed while it was down is unknown.
      () => this.clear(),
    );
    this.listening = true;
  }

  private clear(): void {
    this.generation++;
    this.entries.clear();
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
    if (principal && generation === this.generation)
      this.entries.set(secureValue, { principal, expires: Date.now() + TTL_MS });
    else this.entries.delete(secureValue);
    return principal;
  }

  /**
   * Call after any write that can change who may do what, once it has committed. Never throws: the
   * write is done, so its caller must not get an error for it. A notification that cannot be sent
   * (the database is restarting) is covered by the other processes clearing their caches when their
   * LISTEN connections come back.
   */
  async invalidate(): Promise<void> {
    this.clear();
    const payload = `${this.id}:${++this.sent}`;
    let expected = Infinity;
    const answered = new Set<string>();
    let done: () => void = () => {};
    const echoed = new Promise<void>((resolve) => (done = resolve));
    this.echoes.set(payload, (from) => {
      answered.add(from);
      if (answered.size >= expected) done();
    });
    try {
      if (this.listening) {
        expected = await countListeners(this.database.db).catch(() => Infinity);
        if (answered.size >= expected) done();
      }
      const until = Date.now() + NOTIFY_RETRY_MS;
      for (;;) {
        try {
          await this.database.notify(CHANNEL, payload);
          break;
        } catch {
          if (Date.now() > until) return;
          await pause(100);
        }
      }
      if (this.listening) await Promise.race([echoed, pause(ECHO_WAIT_MS)]);
    } finally {
      this.echoes.delete(payload);
    }
  }
}
