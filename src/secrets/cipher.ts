import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Stored secrets are `enc:v1:<base64 of iv | tag | ciphertext>`: AES-256-GCM with a 12-byte random
 * IV and a 16-byte tag. The version names the algorithm and layout, so a later format can be read
 * beside this one. Values without the prefix were written before encryption and are plain text.
 */
const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_BYTES = 32;

/** A stored secret that cannot be decrypted with this server's key. */
export class SecretDecryptionError extends Error {
  constructor() {
    super(
      'A stored secret could not be decrypted: it was written with another ENCRYPTION_KEY than this server has, ' +
        'or it was altered. Set ENCRYPTION_KEY to the key it was written with, or send the secret again.',
    );
  }
}

export const isSealed = (value: unknown): value is string => typeof value === 'string' && value.startsWith(PREFIX);

export function seal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

/** The plain text of a sealed value; a value written before encryption comes back as it is. */
export function open(key: Buffer, value: string): string {
  if (!isSealed(value)) return value;
  const raw = Buffer.from(value.slice(PREFIX.length), 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretDecryptionError();
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretDecryptionError();
  }
}
