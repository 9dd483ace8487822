import { ApiError } from '../core/errors.js';
import { isSealed, SecretDecryptionError, type SecretBox } from '../secrets/index.js';
import { secretFields, type DestinationType } from './destination-config.js';
import { NonRetryableError } from './destinations/types.js';

/**
 * For each destination type, the secret that authenticates the export at its destination and the
 * fields that say where that is or as whom the export signs in. A stored secret follows a change of
 * those fields only when the same request sends it again: otherwise anyone allowed to edit the export
 * could point it at a server of their own and receive the secret someone else entered.
 */
const GUARDED: Partial<Record<DestinationType, { secret: string; fields: string[] }>> = {
  HTTP: { secret: 'token', fields: ['url'] },
  S3: { secret: 'aws_secret_access_key', fields: ['endpoint_url', 'aws_access_key_id'] },
  // Without certificate checks another server can stand in for the host, hence has_self_signed_cert.
  Postgres: { secret: 'password', fields: ['host', 'port', 'database', 'user', 'has_self_signed_cert'] },
};

const present = (v: unknown) => v !== undefined && v !== null && v !== '';
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * Refuses a PATCH that keeps the stored secret while changing where it is sent. `patch` is the
 * request's config, `merged` the config as it would be stored.
 */
export function checkSecretNotRedirected(
  type: DestinationType,
  stored: Record<string, unknown>,
  patch: Record<string, unknown>,
  merged: Record<string, unknown>,
): void {
  const rule = GUARDED[type];
  if (!rule || !present(stored[rule.secret]) || rule.secret in patch) return;
  const changed = rule.fields.filter((f) => !same(stored[f], merged[f]));
  if (!changed.length) return;
  throw ApiError.validation(
    `destination__config__${rule.secret}`,
    `Send '${rule.secret}' again to change ${changed.map((f) => `'${f}'`).join(', ')}: ` +
      'the stored secret is not sent to a new destination.',
    'required',
  );
}

/**
 * The config as stored: secret strings encrypted. What the request sent is always encrypted (even a
 * value that looks encrypted, so a copied ciphertext can never be decrypted on a tenant's behalf);
 * what was already stored is encrypted if it was written before encryption.
 */
export function sealDestinationSecrets(
  box: SecretBox,
  type: string,
  config: Record<string, unknown>,
  incoming: Record<string, unknown>,
): Record<string, unknown> {
  const out = { ...config };
  for (const f of secretFields(type)) {
    const v = out[f];
    if (typeof v === 'string' && v !== '' && (f in incoming || !isSealed(v))) out[f] = box.seal(v);
  }
  return out;
}

/** The config with its secrets decrypted, for the run that sends to the destination. */
export function openDestinationSecrets(
  box: SecretBox,
  type: string,
  config: Record<string, unknown>,
): Record<string, unknown> {
  const out = { ...config };
  try {
    for (const f of secretFields(type)) if (typeof out[f] === 'string') out[f] = box.open(out[f]);
  } catch (err) {
    if (err instanceof SecretDecryptionError) throw new NonRetryableError(err.message);
    throw err;
  }
  return out;
}
