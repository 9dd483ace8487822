// Bundles the long-running processes (the server and the standalone worker), and the capture
// decoder's thread (src/capture/decode-thread.ts looks for it beside server.mjs), into plain JavaScript
// under dist/app/. Running them without a TypeScript loader in the process saves about 55 MB of
// resident memory and the start-up transpile. Dependencies stay in node_modules (not bundled).
// dist/app/ is two folders below the project root, as src/http and src/db are, so the paths those
// modules resolve from their own location (generated/openapi.json, drizzle/) hold in the bundle too;
// another output folder given as the argument must be as deep (tests build into dist/<own>/).
import { build } from 'esbuild';

const outdir = process.argv[2] ?? 'dist/app';
if (outdir.replace(/\/+$/, '').split('/').length !== 2)
  throw new Error(`${outdir}: the bundle must be two folders below the project root`);

await build({
  entryPoints: ['src/server.ts', 'src/worker.ts', { in: 'src/capture/decode-worker.ts', out: 'decode-worker' }],
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
