// Bundles the long-running processes (the server and the standalone worker), the capture decoder's
// thread (src/capture/decode-thread.ts looks for it beside server.mjs) and the operator CLI into plain
// JavaScript under dist/app/. Running them without a TypeScript loader in the process saves about 55 MB
// of resident memory and the start-up transpile, and leaves the production install (`make run`) without
// one. Dependencies stay in node_modules (not bundled).
// dist/app/ is two folders below the project root, as src/http and src/db are, so the paths those
// modules resolve from their own location (generated/openapi.json, drizzle/) hold in the bundle too;
// another output folder given as the argument must be as deep (tests build into dist/<own>/).
// Names after the folder build only those bundles: `npm run cli` builds the CLI alone into dist/cli/,
// so that running it beside a server never rewrites the files that server loads.
import { build } from 'esbuild';

const ENTRIES = {
  server: 'src/server.ts',
  worker: 'src/worker.ts',
  'decode-worker': 'src/capture/decode-worker.ts',
  // The HogQL parser's thread (src/hogql/parse-thread.ts looks for it beside server.mjs and worker.mjs).
  'hogql-parse-worker': 'src/hogql/parse-worker.ts',
  cli: 'src/cli/index.ts',
};

const [outdir = 'dist/app', ...names] = process.argv.slice(2);
if (outdir.replace(/\/+$/, '').split('/').length !== 2)
  throw new Error(`${outdir}: the bundle must be two folders below the project root`);
for (const name of names) if (!(name in ENTRIES)) throw new Error(`${name}: not one of ${Object.keys(ENTRIES)}`);

await build({
  entryPoints: (names.length ? names : Object.keys(ENTRIES)).map((out) => ({ in: ENTRIES[out], out })),
  outdir,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: true,
  // Stack traces under --enable-source-maps name src/ files and lines; the sources themselves are in the
  // repository, and leaving them out of the map keeps about 4 MB less resident in the server.
  sourcesContent: false,
  logLevel: 'warning',
});
