import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { unzipSync } from 'fflate';
import tarStream from 'tar-stream';
import { guardedFetch, type NetworkPolicy } from '../net/index.js';

/** A problem with a plugin's archive or files that the caller can fix: answered as a 400. */
export class PluginPackageError extends Error {}

const DOWNLOAD_TIMEOUT_MS = 15_000;
/** A tarball must unpack to at most this many times the download limit. */
const UNPACK_FACTOR = 8;

/** The url as it may be shown: without a `?private_token=` or any other query. */
export function displayUrl(url: string): string {
  return url.split('?')[0]!;
}

/**
 * Downloads at most `maxBytes` from an http(s) url; a failure or a larger body is an error naming `what`.
 * A tenant's url goes through `policy` (each redirect hop too); only the operator's own urls go without.
 */
export async function download(url: string, maxBytes: number, what = 'the plugin archive', policy?: NetworkPolicy): Promise<Buffer> {
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
    new PluginPackageError(`${what[0]!.toUpperCase()}${what.slice(1)} at ${shown} is larger than the ${maxBytes} bytes allowed.`);
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

function unpackZip(buf: Uint8Array, maxBytes: number): Map<string, Uint8Array> {
  let total = 0;
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(buf, {
      filter(file) {
        checkPath(file.name);
        if (file.name.endsWith('/')) return false;
        if (file.originalSize > maxBytes) {
          throw new PluginPackageError(`"${file.name}" in the plugin archive is larger than the ${maxBytes} bytes allowed.`);
        }
        total += file.originalSize;
        if (total > maxBytes * UNPACK_FACTOR) {
          throw new PluginPackageError(`The plugin archive unpacks to more than ${maxBytes * UNPACK_FACTOR} bytes.`);
        }
        return true;
      },
    });
  } catch (err) {
    if (err instanceof PluginPackageError) throw err;
    throw new PluginPackageError(`The plugin archive is not a valid zip file: ${(err as Error).message}`);
  }
  return new Map(Object.entries(files));
}

async function unpackTarGz(buf: Uint8Array, maxBytes: number): Promise<Map<string, Uint8Array>> {
  let tar: Buffer;
  try {
    tar = gunzipSync(buf, { maxOutputLength: maxBytes * UNPACK_FACTOR });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new PluginPackageError(`The plugin archive unpacks to more than ${maxBytes * UNPACK_FACTOR} bytes.`);
    }
    throw new PluginPackageError(`The plugin archive is not a valid gzip file: ${(err as Error).message}`);
  }
  const files = new Map<string, Uint8Array>();
  const extract = tarStream.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      try {
        checkPath(header.name);
      } catch (err) {
        stream.resume();
        extract.destroy(err as Error);
        return;
      }
      // Links, devices and folders carry no plugin code; links are never followed.
      if (header.type !== 'file' && header.type !== 'contiguous-file') {
        stream.on('end', next);
        stream.resume();
        return;
      }
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => chunks.push(c as Buffer));
      stream.on('end', () => {
        files.set(header.name.replace(/^\.\//, ''), Buffer.concat(chunks));
        next();
      });
    });
    extract.on('finish', resolve);
    extract.on('error', (err) =>
      reject(err instanceof PluginPackageError ? err : new PluginPackageError(`The plugin archive is not a valid tar file: ${err.message}`)),
    );
  });
  extract.end(tar);
  await done;
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
