import { BlockList, isIP, isIPv4 } from 'node:net';

/**
 * IPv4 ranges that are not the public internet: unspecified and "this network", private (10/8,
 * 172.16/12, 192.168/16), carrier-grade NAT, loopback, link-local (cloud metadata services live at
 * 169.254.169.254), IETF protocol assignments, documentation, benchmarking, multicast, reserved and
 * broadcast.
 */
const RESERVED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
];

/**
 * IPv6 ranges that are not the public internet. Forms that carry an IPv4 address (mapped,
 * compatible, NAT64, 6to4) are judged by that address instead, see `embeddedV4`.
 */
const RESERVED_V6 = [
  '::/128',
  '::1/128',
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/23',
  '2001:db8::/32',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
];

function blockList(v4: string[], v6: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of v4) addCidr(list, cidr);
  for (const cidr of v6) addCidr(list, cidr);
  return list;
}

const RESERVED = blockList(RESERVED_V4, RESERVED_V6);

/** Adds `a.b.c.d/n`, `x::/n` or a bare address (a /32 or /128) to `list`; false when it is none of these. */
export function addCidr(list: BlockList, cidr: string): boolean {
  const [address = '', bits, ...rest] = cidr.trim().split('/');
  const family = isIP(address);
  if (!family || rest.length) return false;
  const max = family === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return false;
  list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  return true;
}

/** The 16 bytes of an IPv6 address (without a zone), or undefined when it is not one. */
export function ipv6Bytes(address: string): Uint8Array | undefined {
  const ip = address.replace(/%.*$/, '');
  if (isIP(ip) !== 6) return undefined;
  let tail: number[] = [];
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  let text = ip;
  if (dotted) {
    tail = dotted[1]!.split('.').map(Number);
    text = `${ip.slice(0, -dotted[1]!.length)}0:0`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = rest ? rest.split(':') : [];
  const groups =
    rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    const n = parseInt(g, 16);
    bytes[i * 2] = n >> 8;
    bytes[i * 2 + 1] = n & 0xff;
  });
  if (dotted) bytes.set(tail, 12);
  return bytes;
}

const v4At = (b: Uint8Array, i: number) => `${b[i]}.${b[i + 1]}.${b[i + 2]}.${b[i + 3]}`;
const zero = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);

/**
 * The IPv4 address an IPv6 address stands for, where it stands for one: IPv4-mapped
 * (`::ffff:127.0.0.1`), IPv4-compatible (`::127.0.0.1`, which includes `::` and `::1`), NAT64
 * (`64:ff9b::/96`) and 6to4 (`2002::/16`). A connection to any of them may reach that IPv4 address.
 */
export function embeddedV4(address: string): string | undefined {
  const b = ipv6Bytes(address);
  if (!b) return undefined;
  if (zero(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return v4At(b, 12);
  if (zero(b, 0, 12)) return v4At(b, 12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(b, 4, 12)) return v4At(b, 12);
  if (b[0] === 0x20 && b[1] === 0x02) return v4At(b, 2);
  return undefined;
}

/**
 * True when `address` (an IP address) is loopback, private, link-local, multicast, unspecified or otherwise not
 * public.
 */
export function isReserved(address: string): boolean {
  const ip = address.replace(/%.*$/, '');
  if (isIPv4(ip)) return RESERVED.check(ip, 'ipv4');
  if (isIP(ip) !== 6) return true;
  if (RESERVED.check(ip, 'ipv6')) return true;
  const v4 = embeddedV4(ip);
  return v4 !== undefined && RESERVED.check(v4, 'ipv4');
}

/** Whether `address` is in `list`, judging an IPv6 form that stands for an IPv4 address by that address too. */
export function listed(list: BlockList, address: string): boolean {
  const ip = address.replace(/%.*$/, '');
  if (isIPv4(ip)) return list.check(ip, 'ipv4');
  if (isIP(ip) !== 6) return false;
  if (list.check(ip, 'ipv6')) return true;
  const v4 = embeddedV4(ip);
  return v4 !== undefined && list.check(v4, 'ipv4');
}

const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$/;

export type Host = { kind: 'ip'; address: string } | { kind: 'name'; name: string };

/**
 * What a tenant-supplied host names: an IP address, written in any form the URL standard (and the
 * C library's resolver) reads as one (`0x7f000001`, `2130706433`, `127.1`, `0177.0.0.1`, `[::1]`), or
 * a DNS name. Undefined for anything else (a path, a list, a port, spaces).
 */
export function parseHost(host: string): Host | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(bare.replace(/%.*$/, ''))) return { kind: 'ip', address: bare.replace(/%.*$/, '').toLowerCase() };
  if (!HOSTNAME.test(host)) return undefined;
  let hostname: string;
  try {
    hostname = new URL(`http://${host}/`).hostname;
  } catch {
    // A name whose last label is a number that is no IPv4 address (`1.2.3.4.5`, `0x1g`) is no host.
    return undefined;
  }
  return isIP(hostname) ? { kind: 'ip', address: hostname } : { kind: 'name', name: hostname.replace(/\.$/, '') };
}
