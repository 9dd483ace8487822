import { lookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import { embeddedV4, parseHost } from './addresses.js';

/** Where a PostgreSQL database is reached over TCP. */
export interface DatabaseTarget {
  host: string;
  port: number;
  database: string;
}

/**
 * The TCP target of a postgres:// URL, read as postgres.js reads it (`?host=` overrides the URL's
 * host; the database defaults to the user's name). Undefined for a Unix socket, which tenants'
 * destinations cannot name.
 */
export function databaseTarget(url: string | undefined): DatabaseTarget | undefined {
  if (!url) return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const host = u.searchParams.get('host') || decodeURIComponent(u.hostname) || 'localhost';
  if (host.includes('/')) return undefined;
  const port = Number(u.searchParams.get('port') || u.port || 5432);
  const database = decodeURIComponent(u.pathname.slice(1)) || decodeURIComponent(u.username) || 'postgres';
  return { host: host.replace(/^\[|\]$/g, ''), port, database };
}

/** One spelling per address: IPv4 forms of IPv6 addresses that stand for one, IPv6 as the URL standard writes it. */
function canonical(address: string): string {
  const v4 = address.includes(':') ? embeddedV4(address) : address;
  if (v4 && !/^0\.0\.0\.[01]$/.test(v4)) return v4;
  return new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname.slice(1, -1);
}

/** Addresses that reach this machine's own listeners: loopback, unspecified, and its interfaces'. */
function isThisMachine(address: string): boolean {
  if (/^(127\.|0\.0\.0\.0$)/.test(address) || address === '::1' || address === '::') return true;
  return Object.values(networkInterfaces()).some((list) => list?.some((i) => canonical(i.address) === address));
}

async function addressesOf(host: string): Promise<string[]> {
  const parsed = parseHost(host);
  if (!parsed) return [];
  if (parsed.kind === 'ip') return [canonical(parsed.address)];
  try {
    return (await lookup(parsed.name, { all: true })).map((a) => canonical(a.address));
  } catch {
    return [];
  }
}

/**
 * The server's own database. A batch export into it could write rows of its own choosing into the
 * server's tables (a personal API key, a membership), so destinations that reach it are refused,
 * whatever ALLOW_PRIVATE_NETWORKS says.
 */
export class OwnDatabase {
  constructor(readonly target: DatabaseTarget | undefined) {}

  static message = "This is the server's own database: a batch export cannot write into it.";

  /**
   * A test for the addresses a destination at `port`/`database` resolves to: true for an address of
   * the server's own database. Undefined when port or database differ, so no address can be.
   */
  async matcher(port: number, database: string): Promise<((address: string) => boolean) | undefined> {
    const own = this.target;
    if (!own || own.port !== Number(port) || own.database !== database) return undefined;
    const ownAddresses = await addressesOf(own.host);
    const ownIsLocal = ownAddresses.some(isThisMachine);
    return (address) => {
      const a = canonical(address);
      return ownAddresses.includes(a) || (ownIsLocal && isThisMachine(a));
    };
  }

  /** Whether a destination host, port and database name (as saved) lead to the server's own database. */
  async isOwn(host: string, port: number, database: string): Promise<boolean> {
    const match = await this.matcher(port, database);
    if (!match) return false;
    return (await addressesOf(host)).some(match);
  }
}
