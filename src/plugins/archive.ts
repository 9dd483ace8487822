import { createHash } from 'node:crypto';
import { createGunzip } from 'node:zlib';
import { Unzip, UnzipInflate } from 'fflate';
import tarStream from 'tar-stream';
import { guardedFetch, type NetworkPolicy } from '../net/index.js';

/** A problem with a plugin's archive or files that the caller can fix: answered as a 400. */
export class PluginPackageError extends Error {}

const DOWNLOAD_TIMEOUT_MS = 15_000;

/** The url as it may be shown: without a `?private_token=` or any other query. */
export function displayUrl(url: string): string {
  return url.split('?')[0]!;
}

/**
 * Downloads at most `maxBytes` from an http(s) url; a failure or a larger body is an error naming `what`.
 * A tenant's url goes through `policy` (each redirect hop too); only the operator's own urls go without.
 */
export async function download(
  url: string,
  maxBytes: number,
  what = 'the plugin archive',
  policy?: NetworkPolicy,
): Promise<Buffer> {
  const shown = displayUrl(url);
  let res: Response;
  try {
    const signal = AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS);
    res = policy ? await guardedFetch(policy, url, { signal }) : await fetch(url, { redirect: 'follow', signal });
  } catch (err) {
    const reason = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new PluginPackageError(
      `Could not download ${what} from ${shown}: ${reason?.code ?? reason?.message ?? (err as Error).message}`,
    );
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => {});
    throw new PluginPackageError(`Could not download ${what} from ${shown}: HTTP ${res.status}`);
  }
  const tooLarge = () =>
    new PluginPackageError(
      `${what[0]!.toUpperCase()}${what.slice(1)} at ${shown} is larger than the ${maxBytes} bytes allowed.`,
    );
  if (Number(res.headers.get('content-length') ?? 0) > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = res.body!.getReader();
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (err) {
      throw new PluginPackageError(`Could not download ${what} from ${shown}: ${(err as Error).message}`);
    }
    if (chunk.done) break;
    total += chunk.value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(chunk.value);
  }
  return Buffer.concat(chunks);
}

/** Entry names are used only as map keys, but one that climbs out of the archive is refused outright. */
function checkPath(name: string): void {
  const unsafe =
    name.includes('\0') ||
    name.includes('\\') ||
    name.startsWith('/') ||
    /^[a-zA-Z]:/.test(name) ||
    name.split('/').some((part) => part === '..');
  if (unsafe) throw new PluginPackageError(`The plugin archive holds an unsafe path: "${name}".`);
}

/**
 * What an archive may unpack to: every file and all of them together at most `max` bytes. Sizes an
 * archive declares are checked before anything is inflated, and the bytes actually produced are
 * counted as they come, since a declared size may lie.
 */
class UnpackBudget {
  private total = 0;
  constructor(private readonly max: number) {}

  private fileTooLarge(name: string): PluginPackageError {
    return new PluginPackageError(`"${name}" in the plugin archive is larger than the ${this.max} bytes allowed.`);
  }
  private totalTooLarge(): PluginPackageError {
    return new PluginPackageError(`The plugin archive unpacks to more than ${this.max} bytes.`);
  }

  declare(name: string, size: number): void {
    if (size > this.max) throw this.fileTooLarge(name);
    if (this.total + size > this.max) throw this.totalTooLarge();
  }

  /** Counts `bytes` more of `name`, which has now unpacked to `fileSize` bytes. */
  add(name: string, fileSize: number, bytes: number): void {
    if (fileSize > this.max) throw this.fileTooLarge(name);
    this.total += bytes;
    if (this.total > this.max) throw this.totalTooLarge();
  }
}

/** Compressed bytes handed to the inflater at a time: deflate expands at most ~1032-fold, so one step stays small. */
const ZIP_STEP = 4096;

/** A zip ends with its end-of-central-directory record, in the last 64 KiB (its comment) + 22 bytes. */
function hasZipEnd(buf: Uint8Array): boolean {
  for (let i = buf.length - 22; i >= 0 && buf.length - i <= 65_557; i--) {
    if (buf[i] === 0x50 && buf[i + 1] === 0x4b && buf[i + 2] === 0x05 && buf[i + 3] === 0x06) return true;
  }
  return false;
}

function unpackZip(buf: Uint8Array, maxBytes: number): Map<string, Uint8Array> {
  const notZip = (reason: string) => new PluginPackageError(`The plugin archive is not a valid zip file: ${reason}`);
  if (!hasZipEnd(buf)) throw notZip('invalid zip data');
  const budget = new UnpackBudget(maxBytes);
  const files = new Map<string, Uint8Array>();
  const unfinished = new Set<string>();
  let failure: Error | undefined;
  const fail = (err: unknown) => {
    failure ??= err instanceof PluginPackageError ? err : notZip((err as Error).message);
  };
  // Streamed entry by entry (fflate's Unzip), so that an entry is stopped as soon as it passes the
  // budget, whatever size its headers claim.
  const unzip = new Unzip((file) => {
    if (failure) return;
    try {
      checkPath(file.name);
      if (file.name.endsWith('/')) return;
      if (file.originalSize !== undefined) budget.declare(file.name, file.originalSize);
    } catch (err) {
      fail(err);
      return;
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    unfinished.add(file.name);
    file.ondata = (err, data, final) => {
      if (failure) return;
      if (err) return fail(err);
      try {
        size += data.length;
        budget.add(file.name, size, data.length);
      } catch (tooLarge) {
        fail(tooLarge);
        file.terminate();
        return;
      }
      chunks.push(data);
      if (final) {
        files.set(file.name, Buffer.concat(chunks));
        unfinished.delete(file.name);
      }
    };
    file.start();
  });
  unzip.register(UnzipInflate);
  try {
    for (let at = 0; at < buf.length && !failure; at += ZIP_STEP) {
      unzip.push(buf.subarray(at, at + ZIP_STEP), at + ZIP_STEP >= buf.length);
    }
  } catch (err) {
    fail(err);
  }
  if (failure) throw failure;
  if (unfinished.size) throw notZip(`"${[...unfinished][0]}" is truncated`);
  return files;
}

async function unpackTarGz(buf: Uint8Array, maxBytes: number): Promise<Map<string, Uint8Array>> {
  const budget = new UnpackBudget(maxBytes);
  // Headers, padding and skipped entries are not files, but they are unpacked too.
  const maxTarBytes = 2 * maxBytes;
  const files = new Map<string, Uint8Array>();
  const gunzip = createGunzip();
  const extract = tarStream.extract();
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      gunzip.destroy();
      extract.destroy();
      reject(err);
    };
    let tarBytes = 0;
    gunzip.on('error', (err) =>
      fail(new PluginPackageError(`The plugin archive is not a valid gzip file: ${err.message}`)),
    );
    gunzip.on('data', (chunk: Buffer) => {
      tarBytes += chunk.length;
      if (tarBytes > maxTarBytes)
        return fail(new PluginPackageError(`The plugin archive unpacks to more than ${maxTarBytes} bytes.`));
      if (!extract.write(chunk)) gunzip.pause();
    });
    gunzip.on('end', () => extract.end(undefined));
    extract.on('drain', () => gunzip.resume());
    extract.on('error', (err: Error) =>
      fail(
        err instanceof PluginPackageError
          ? err
          : new PluginPackageError(`The plugin archive is not a valid tar file: ${err.message}`),
      ),
    );
    extract.on('finish', () => {
      if (!failed) resolve();
    });
    extract.on('entry', (header, stream, next) => {
      // Destroying the extract destroys the entry being read with the same error, which the
      // extract's own handler reports; unhandled here it would be thrown out of the process.
      stream.on('error', () => {});
      const name = header.name;
      try {
        checkPath(name);
        // Links, devices and folders carry no plugin code; links are never followed.
        if (header.type !== 'file' && header.type !== 'contiguous-file') {
          stream.on('end', next);
          stream.resume();
          return;
        }
        budget.declare(name, header.size ?? 0);
      } catch (err) {
        fail(err as Error);
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (data: unknown) => {
        const chunk = data as Buffer;
        if (failed) return;
        try {
          size += chunk.length;
          budget.add(name, size, chunk.length);
        } catch (err) {
          fail(err as Error);
          return;
        }
        chunks.push(chunk);
      });
      stream.on('end', () => {
        if (failed) return;
        files.set(name.replace(/^\.\//, ''), Buffer.concat(chunks));
        next();
      });
    });
    gunzip.end(buf);
  });
  return files;
}

/** Unpacks a zip or a gzipped tar into its regular files, refusing unsafe paths and oversized content. */
export async function unpackArchive(buf: Uint8Array, maxBytes: number): Promise<Map<string, Uint8Array>> {
  if (buf[0] === 0x50 && buf[1] === 0x4b) return unpackZip(buf, maxBytes);
  if (buf[0] === 0x1f && buf[1] === 0x8b) return unpackTarGz(buf, maxBytes);
  throw new PluginPackageError('The plugin archive is neither a zip file nor a gzipped tar.');
}

/**
 * The folder of an archive that holds `plugin.json`: the top level, or the one folder everything is
 * in (a repository archive's `<repo>-<ref>/`, a package tarball's `package/`).
 */
export function archiveRoot(files: Map<string, Uint8Array>): string {
  if (files.has('plugin.json')) return '';
  const tops = new Set([...files.keys()].map((name) => name.split('/')[0]));
  if (tops.size === 1) {
    const root = `${[...tops][0]}/`;
    if (files.has(`${root}plugin.json`)) return root;
  }
  throw new PluginPackageError('Could not find plugin.json in the plugin');
}

export function sha256Hex(buf: Uint8Array): string {
  return createHash('sha256').update(buf).digest('hex');
}

export { checkPath };
