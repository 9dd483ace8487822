import { resolve } from 'node:path';
import { open, seal } from './cipher.js';
import { loadKey, type KeySettings, type LoadedKey } from './key.js';

export { isSealed, SecretDecryptionError } from './cipher.js';

/** Encrypts and decrypts stored secrets with one key. */
export class SecretBox {
  constructor(private readonly key: Buffer) {}

  seal(plaintext: string): string {
    return seal(this.key, plaintext);
  }

  /** Throws SecretDecryptionError when the value was sealed with another key. */
  open(value: string): string {
    return open(this.key, value);
  }
}

const boxes = new Map<string, { box: SecretBox; loaded: LoadedKey }>();

function entry(settings: KeySettings) {
  const id = `${settings.encryptionKey ?? ''}\0${resolve(settings.dataDir)}`;
  let found = boxes.get(id);
  if (!found) {
    const loaded = loadKey(settings);
    found = { box: new SecretBox(loaded.key), loaded };
    boxes.set(id, found);
  }
  return found;
}

/** The box of a configuration; the key is read (or generated) once per process. */
export function secretBox(settings: KeySettings): SecretBox {
  return entry(settings).box;
}

/**
 * Loads the key at start-up, so a bad ENCRYPTION_KEY stops the process at once and a generated key
 * is written before any request needs it. A key kept in one machine's data folder is not shared with
 * processes elsewhere: with DATABASE_URL set, each machine would encrypt with a key of its own and
 * the others could not decrypt, hence the warning.
 */
export function prepareSecretBox(
  settings: KeySettings & { databaseUrl: string | undefined },
  warn: (msg: string) => void,
): SecretBox {
  const { box, loaded } = entry(settings);
  if (loaded.source === 'generated')
    warn(`Generated an encryption key for stored secrets in ${loaded.path}; keep it with the data.`);
  if (settings.databaseUrl && loaded.source !== 'env') {
    warn(
      `ENCRYPTION_KEY is not set: secrets are encrypted with the key in ${loaded.path}. Every process that shares ` +
        'DATABASE_URL must use the same key; on several machines, set ENCRYPTION_KEY to that key everywhere.',
    );
  }
  return box;
}
