import { isSealed, type SecretBox } from '../secrets/index.js';

/** PostHog's password-protected share tokens last 24 hours. */
const TTL_MS = 24 * 60 * 60 * 1000;

export interface ShareGrant {
  /** The sharing configuration and the password that opened it. */
  sharing: number;
  password: number;
  /** The share's access token at the time: rotating it ends every grant. */
  access_token: string;
  expires: number;
}

/**
 * The `shareToken` a correct password earns. It is sealed with the server's secret key (authenticated
 * encryption), so it cannot be forged or altered, and needs no storage.
 */
export function issueShareToken(box: SecretBox, grant: Omit<ShareGrant, 'expires'>, now = Date.now()): string {
  return box.seal(JSON.stringify({ ...grant, expires: now + TTL_MS }));
}

/** The grant inside a share token, or undefined when it is not one of ours or has expired. */
export function readShareToken(box: SecretBox, token: string, now = Date.now()): ShareGrant | undefined {
  if (!isSealed(token)) return undefined;
  try {
    const grant = JSON.parse(box.open(token)) as ShareGrant;
    return typeof grant.expires === 'number' && grant.expires > now ? grant : undefined;
  } catch {
    return undefined;
  }
}
