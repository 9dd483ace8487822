// Decompression bombs in the encodings PostHog's SDKs use, and a `/_health` prober measuring from
// this process: shared by bench/bombs.ts and test/security/capture-bombs.test.ts.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

/** Many small values: what costs the most to parse per byte, and compresses to almost nothing. */
const props = Object.fromEntries(Array.from({ length: 60 }, (_, k) => [`p${k}`, k % 3 ? k : `v${k}`]));

/** A valid /batch/ body of about `bytes` of JSON that compresses to almost nothing. */
export function batchJson(token: string, bytes: number): Buffer {
  const one = (i: number) => ({ event: '$pageview', distinct_id: 'bomb', properties: { i, ...props } });
  const size = JSON.stringify(one(999_999)).length + 1;
  const batch = Array.from({ length: Math.floor((bytes - 200) / size) }, (_, i) => one(i));
  return Buffer.from(JSON.stringify({ api_key: token, batch }));
}

/**
 * gzip with a second, empty member: the trailer of the last member then says the body inflates to
 * 0 bytes, whatever the first one holds.
 */
export function multiMemberGzip(json: Buffer): Buffer {
  return Buffer.concat([gzipSync(json, { level: 9 }), gzipSync(Buffer.alloc(0))]);
}

/** posthog-js's form encoding: `data=<base64 of gzip>&compression=gzip-js`. */
export function base64GzipForm(json: Buffer): string {
  return `data=${encodeURIComponent(gzipSync(json, { level: 9 }).toString('base64'))}&compression=gzip-js`;
}

export interface Bomb {
  name: string;
  body: Buffer | string;
  contentType: string;
}

/** The two shapes of bomb of the report, each inflating to `json`. */
export function bombs(json: Buffer): Bomb[] {
  return [
    { name: 'multi-member gzip', body: multiMemberGzip(json), contentType: 'text/plain' },
    {
      name: 'base64 gzip form',
      body: base64GzipForm(json),
      contentType: 'application/x-www-form-urlencoded',
    },
  ];
}

export async function sendBomb(base: string, bomb: Bomb, path = '/batch/'): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': bomb.contentType },
    body: typeof bomb.body === 'string' ? bomb.body : new Uint8Array(bomb.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

/** The nearest-rank percentile of a list of latencies. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
}

/** Resident memory of a process, in MB. */
export function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/**
 * Asks `/_health` every `everyMs` while `work` runs; the latencies of the answers, and the peak
 * RSS of `pid` sampled alongside.
 */
export async function healthDuring<T>(
  base: string,
  pid: number,
  work: () => Promise<T>,
  everyMs = 20,
): Promise<{ result: T; latencies: number[]; peakRssMb: number }> {
  const latencies: number[] = [];
  let peakRssMb = rssMb(pid);
  let done = false;
  const probe = (async () => {
    while (!done) {
      const t0 = performance.now();
      await fetch(`${base}/_health`).then((r) => r.arrayBuffer());
      latencies.push(performance.now() - t0);
      peakRssMb = Math.max(peakRssMb, rssMb(pid));
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  try {
    const result = await work();
    return { result, latencies, peakRssMb };
  } finally {
    done = true;
    await probe;
  }
}
