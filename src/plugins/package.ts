import { readFile, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, sep, posix } from 'node:path';
import { archiveRoot, checkPath, download, PluginPackageError, sha256Hex, unpackArchive } from './archive.js';
import { capabilitiesOf, type Capabilities } from './capabilities.js';
import type { NetworkPolicy } from '../net/index.js';

/** What installing or upgrading takes from a plugin's files. */
export interface PluginPackage {
  name: string;
  description: string;
  icon: string | null;
  config_schema: unknown;
  public_jobs: Record<string, unknown>;
  capabilities: Capabilities;
  /** The version the package declares, else a digest of its content. */
  tag: string | null;
  /** Stored as the plugin's source files; the main file is stored as `index.ts`, as PostHog does. */
  files: Record<string, string>;
}

type Reader = (path: string) => Promise<Uint8Array | undefined>;

const decoder = new TextDecoder('utf-8', { fatal: true });

function text(path: string, bytes: Uint8Array): string {
  let out: string;
  try {
    out = decoder.decode(bytes);
  } catch {
    throw new PluginPackageError(`${path} is not UTF-8 text.`);
  }
  if (out.includes('\0')) throw new PluginPackageError(`${path} is not text.`);
  return out;
}

/** Parses plugin.json as `update_source` and installs both need it: a JSON object. */
export function parsePluginJson(source: string): Record<string, unknown> {
  let json: unknown;
  try {
    json = JSON.parse(source);
  } catch (err) {
    throw new PluginPackageError(`Could not parse plugin.json: ${(err as Error).message}`);
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    throw new PluginPackageError('plugin.json must hold a JSON object.');
  }
  const { name, config } = json as Record<string, unknown>;
  if (name !== undefined && (typeof name !== 'string' || !name.trim() || name.length > 200)) {
    throw new PluginPackageError('plugin.json: "name" must be a non-empty string of at most 200 characters.');
  }
  if (config !== undefined && (typeof config !== 'object' || config === null)) {
    throw new PluginPackageError('plugin.json: "config" must be a list of fields or an object.');
  }
  return json as Record<string, unknown>;
}

async function readPackage(read: Reader, fallbackTag: () => string | null): Promise<PluginPackage> {
  const manifestBytes = await read('plugin.json');
  if (!manifestBytes) throw new PluginPackageError('Could not find plugin.json in the plugin');
  const manifestText = text('plugin.json', manifestBytes);
  const manifest = parsePluginJson(manifestText);
  if (typeof manifest.name !== 'string') throw new PluginPackageError('plugin.json has no "name".');

  const files: Record<string, string> = { 'plugin.json': manifestText };
  for (const name of ['frontend.tsx', 'site.ts']) {
    const bytes = await read(name);
    if (bytes) files[name] = text(name, bytes);
  }
  const mains = typeof manifest.main === 'string' ? [manifest.main] : ['index.js', 'index.ts'];
  let capabilities: Capabilities = {};
  for (const main of mains) {
    const path = posix.normalize(main).replace(/^\.\//, '');
    checkPath(path);
    const bytes = await read(path);
    if (!bytes) continue;
    files['index.ts'] = text(path, bytes);
    capabilities = await capabilitiesOf(path, files['index.ts']);
    break;
  }
  if (!files['index.ts'] && !files['frontend.tsx'] && !files['site.ts']) {
    throw new PluginPackageError(`Could not find main file ${mains.join(' or ')}`);
  }

  let version: unknown = manifest.version;
  if (typeof version !== 'string') {
    const pkg = await read('package.json');
    try {
      version = pkg ? (JSON.parse(text('package.json', pkg)) as { version?: unknown }).version : undefined;
    } catch {
      version = undefined;
    }
  }
  return {
    name: manifest.name,
    description: typeof manifest.description === 'string' ? manifest.description : '',
    icon: typeof manifest.icon === 'string' ? manifest.icon.slice(0, 800) : null,
    config_schema: manifest.config ?? [],
    public_jobs: (manifest.publicJobs as Record<string, unknown> | undefined) ?? {},
    capabilities,
    tag: (typeof version === 'string' && version ? version.slice(0, 200) : null) ?? fallbackTag(),
    files,
  };
}

/** Downloads and reads the plugin archive at an http(s) url, reached only as `policy` allows. */
export async function packageFromUrl(url: string, maxBytes: number, policy: NetworkPolicy): Promise<PluginPackage> {
  const archive = await download(url, maxBytes, undefined, policy);
  const entries = await unpackArchive(archive, maxBytes);
  const root = archiveRoot(entries);
  return readPackage(
    async (path) => entries.get(root + path),
    () => sha256Hex(archive).slice(0, 12),
  );
}

/** Reads a `local` plugin's folder, which must lie inside the server's local plugin folder. */
export async function packageFromFolder(
  url: string,
  localDir: string | undefined,
  maxBytes: number,
): Promise<PluginPackage> {
  if (!localDir)
    throw new PluginPackageError('Local plugins are not enabled on this server (PLUGIN_LOCAL_DIR is not set).');
  const base = await realpath(resolve(localDir)).catch(() => undefined);
  const folder = await realpath(resolve(localDir, url.slice('file:'.length))).catch(() => undefined);
  const rel = base && folder ? relative(base, folder) : '..';
  if (rel === '..' || rel.startsWith(`..${sep}`) || resolve(rel) === rel) {
    throw new PluginPackageError(`Could not load plugin.json from: ${url.slice('file:'.length)}`);
  }
  return readPackage(
    async (path) => {
      const file = await realpath(join(folder!, path)).catch(() => undefined);
      if (!file || relative(folder!, file).startsWith('..')) return undefined;
      const info = await stat(file);
      if (!info.isFile()) return undefined;
      if (info.size > maxBytes) throw new PluginPackageError(`${path} is larger than the ${maxBytes} bytes allowed.`);
      return readFile(file);
    },
    () => null,
  );
}

export function isHttpUrl(url: string): boolean {
  return /^https?:\/\/[^\s]+$/i.test(url);
}
