import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { addCidr, isReserved, listed, parseHost } from './addresses.js';

/**
 * A connection the network policy forbids. Its message is the same whether the address was written
 * as given or found through DNS, and nothing is sent to the address, so it tells a tenant no more
 * than "not allowed".
 */
export class NetworkPolicyError extends Error {
  override name = 'NetworkPolicyError';
  readonly code = 'ENETPOLICY';
  constructor(host: string) {
    super(`Refused by network policy: ${host} is, or resolves to, a private or reserved address.`);
  }
}

/** A host that is no host name or IP address (a path, a list, a port). */
export class InvalidHostError extends Error {
  override name = 'InvalidHostError';
  constructor(host: string) {
    super(`"${host}" is not a valid host name or IP address.`);
  }
}

/** Parses ALLOW_PRIVATE_NETWORKS: a comma list of CIDRs (or single addresses). Throws on a bad entry. */
export function parseAllowList(value: string | undefined): string[] {
  const entries = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const entry of entries) {
    if (!addCidr(new BlockList(), entry))
      throw new Error(`ALLOW_PRIVATE_NETWORKS: "${entry}" is not an IP address or CIDR.`);
  }
  return entries;
}

/**
 * Which addresses tenant-supplied connections (plugin downloads, batch export destinations) may
 * reach: every public address, and of the private and reserved ones only those in the operator's
 * allow list. Addresses the operator configures (DATABASE_URL, EMAIL_HOST, ...) do not go through it.
 */
export class NetworkPolicy {
  private readonly allowed = new BlockList();

  constructor(readonly allowList: readonly string[] = []) {
    for (const cidr of allowList) {
      if (!addCidr(this.allowed, cidr))
        throw new Error(`ALLOW_PRIVATE_NETWORKS: "${cidr}" is not an IP address or CIDR.`);
    }
  }

  allows(address: string): boolean {
    return !isReserved(address) || listed(this.allowed, address);
  }

  /**
   * Checks a host as written, without resolving it: a refused IP address (in any of its written
   * forms) throws NetworkPolicyError, something that is no host throws InvalidHostError. A name passes;
   * where it leads is checked when connecting.
   */
  checkLiteral(host: string): void {
    const parsed = parseHost(host);
    if (!parsed) throw new InvalidHostError(host);
    if (parsed.kind === 'ip' && !this.allows(parsed.address)) throw new NetworkPolicyError(host);
  }

  /**
   * The addresses a host may be connected to: its IP address, or those of the name's DNS answers that
   * the policy allows (a name that answers with a private address among public ones is connected to
   * the public ones only). Throws NetworkPolicyError when none is left.
   */
  async resolve(host: string): Promise<LookupAddress[]> {
    const parsed = parseHost(host);
    if (!parsed) throw new InvalidHostError(host);
    if (parsed.kind === 'ip') {
      if (!this.allows(parsed.address)) throw new NetworkPolicyError(host);
      return [{ address: parsed.address, family: isIP(parsed.address) }];
    }
    const answers = await dnsLookup(parsed.name, { all: true, verbatim: true });
    const allowed = answers.filter((a) => this.allows(a.address));
    if (!allowed.length) throw new NetworkPolicyError(host);
    return allowed;
  }

  /**
   * A `lookup` for node's net, tls, http and https: the resolution every connection makes is the one
   * checked, so a name that resolved to a public address when it was saved and to a private one now
   * (DNS rebinding) is refused. Node skips `lookup` for IP addresses: see `agents.ts`.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (addresses) => {
        const family = typeof options === 'object' ? options.family : options;
        const want = family === 4 || family === 'IPv4' ? 4 : family === 6 || family === 'IPv6' ? 6 : 0;
        const fit = want ? addresses.filter((a) => a.family === want) : addresses;
        const usable = fit.length ? fit : addresses;
        if (typeof options === 'object' && options.all)
          (callback as (e: null, a: LookupAddress[]) => void)(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
}

const policies = new Map<string, NetworkPolicy>();

/** The policy for an allow list, made once per list. */
export function networkPolicy(allowList: readonly string[]): NetworkPolicy {
  const key = allowList.join(',');
  let policy = policies.get(key);
  if (!policy) policies.set(key, (policy = new NetworkPolicy(allowList)));
  return policy;
}
