import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const packageJson = require.resolve('posthog-js/package.json');
const DIST = join(dirname(packageJson), 'dist');

/** The installed posthog-js version, which names the files' content (their ETag). */
export const SDK_VERSION: string = (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;

/**
 * posthog-js's browser bundles (`array.js`, `array.full.js`, and the extensions it loads lazily from
 * the same folder), as PostHog serves them under `/static/`. The list is fixed at start-up: only a
 * file that is there by this exact name is ever read.
 */
const NAMES = new Set(readdirSync(DIST).filter((n) => /^[\w.-]+\.js$/.test(n)));
const cache = new Map<string, Buffer>();

export function sdkAsset(name: string): Buffer | undefined {
  if (!NAMES.has(name)) return undefined;
  let body = cache.get(name);
  if (!body) cache.set(name, (body = readFileSync(join(DIST, name))));
  return body;
}
