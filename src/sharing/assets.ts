// The shared page's files: its own script and style sheet (beside this module, under page/) and the
// libraries it draws with, from their installed packages. Served from this origin so that a page
// needs no CDN; the set is fixed here, and only these names are ever read.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const JS = 'application/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

// The bundle in dist/app/ is two folders below the project root, as src/sharing/ is.
const pageFile = (name: string) => fileURLToPath(new URL(`../../src/sharing/page/${name}`, import.meta.url));

const FILES: Record<string, { path: () => string; type: string }> = {
  'shared.js': { path: () => pageFile('shared.js'), type: JS },
  'shared.css': { path: () => pageFile('shared.css'), type: CSS },
  'chart.umd.min.js': { path: () => join(dirname(require.resolve('chart.js')), 'chart.umd.min.js'), type: JS },
  'marked.umd.js': { path: () => join(dirname(require.resolve('marked')), 'marked.umd.js'), type: JS },
  'purify.min.js': { path: () => require.resolve('dompurify/dist/purify.min.js'), type: JS },
};

export interface Asset {
  body: Buffer;
  type: string;
  /** A hash of the content: the ETag, and the version in the page's links. */
  etag: string;
}

const loaded = new Map<string, Asset>();

export function sharedAsset(name: string): Asset | undefined {
  const file = Object.hasOwn(FILES, name) ? FILES[name] : undefined;
  if (!file) return undefined;
  let asset = loaded.get(name);
  if (!asset) {
    const body = readFileSync(file.path());
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
    loaded.set(name, (asset = { body, type: file.type, etag }));
  }
  return asset;
}

/** A file's link, versioned by its content so that a new release is fetched at once despite caching. */
export function assetUrl(name: string): string {
  const asset = sharedAsset(name);
  if (!asset) throw new Error(`${name} is not one of the shared page's files`);
  return `/shared/assets/${name}?v=${asset.etag.slice(1, 9)}`;
}
