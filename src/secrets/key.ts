import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { KEY_BYTES } from './cipher.js';

export const KEY_FILE = 'encryption.key';

export interface KeySettings {
  /** ENCRYPTION_KEY as given. */
  encryptionKey: string | undefined;
  dataDir: string;
}

export interface LoadedKey {
  key: Buffer;
  /** `env`: ENCRYPTION_KEY; `file`: read from the data folder; `generated`: written there just now. */
  source: 'env' | 'file' | 'generated';
  path?: string;
}

/** 32 bytes written as 64 hex digits or as base64 (standard or URL-safe); anything else is refused. */
export function parseKey(text: string, where: string): Buffer {
  const value = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(value)
    ? Buffer.from(value, 'hex')
    : /^[A-Za-z0-9+/_-]+={0,2}$/.test(value)
      ? Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
      : undefined;
  if (key?.length !== KEY_BYTES) {
    throw new Error(
      `${where} must be ${KEY_BYTES} bytes written as base64 or as 64 hex digits ` +
        '(e.g. the output of `openssl rand -base64 32`).',
    );
  }
  return key;
}

/**
 * The key secrets are encrypted with: ENCRYPTION_KEY, else `encryption.key` in the data folder,
 * created (mode 0600) when missing. The file is written aside and hard-linked into place, so processes
 * starting together agree on one key and none reads a half-written file.
 */
export function loadKey(settings: KeySettings): LoadedKey {
  if (settings.encryptionKey) return { key: parseKey(settings.encryptionKey, 'ENCRYPTION_KEY'), source: 'env' };
  const path = join(resolve(settings.dataDir), KEY_FILE);
  const read = (): LoadedKey => ({
    key: parseKey(readFileSync(path, 'utf8'), `The key file ${path}`),
    source: 'file',
    path,
  });
  try {
    return read();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(resolve(settings.dataDir), { recursive: true, mode: 0o700 });
  const aside = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(aside, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(aside, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return read();
  } finally {
    unlinkSync(aside);
  }
  return { ...read(), source: 'generated' };
}
