import { createHash, randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random URL-safe base62 text from `bytes` random bytes (PostHog's generate_random_token). */
export function randomToken(bytes: number): string {
  let n = BigInt(`0x${randomBytes(bytes).toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

/** A new personal API key value: `phx_` and 35 random bytes. */
export function newPersonalApiKeyValue(): string {
  return `phx_${randomToken(35)}`;
}

/** A project token for ingestion: `phc_` and 32 random bytes. */
export function newProjectToken(): string {
  return `phc_${randomToken(32)}`;
}

/** How a key value is stored: unsalted sha256, as PostHog does, so a lookup is one index probe. */
export function hashKeyValue(value: string): string {
  return `sha256$${createHash('sha256').update(value).digest('hex')}`;
}

export function maskKeyValue(value: string): string {
  return value.length < 16 ? '********' : `${value.slice(0, 4)}...${value.slice(-4)}`;
}

/** A public sharing token: 22 random bytes, URL-safe (PostHog's `secrets.token_urlsafe(22)`, 30 characters). */
export function newSharingToken(): string {
  return randomBytes(22).toString('base64url');
}
