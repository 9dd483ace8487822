// The import graph of src/ between folders (a file directly in src/ is its own node; every *handlers.ts is one
// node, the handlers layer), and its cycles:
// each strongly connected set of folders, with one import that closes each edge. Prints nothing and
// exits 0 when there is none. `node scripts/folder-cycles.mjs --all` prints every folder edge too.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = resolve('src');
const files = readdirSync(root, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.ts'));
// A folder's *handlers.ts files are the glue above http/ (src/README.md), so they form one layer of their own.
const nodeOf = (file) => {
  const parts = relative(root, file).split('/');
  if (/handlers\.ts$/.test(file)) return 'handlers';
  return parts.length === 1 ? parts[0].replace(/\.ts$/, '') : parts[0];
};
const edges = new Map();
for (const f of files) {
  const path = join(root, f);
  const text = readFileSync(path, 'utf8');
  for (const [, spec] of text.matchAll(/(?:^|\n)\s*(?:import|export)\s(?!type\s)[^'"]*?from\s+'(\.[^']+)'/g)) {
    const target = resolve(dirname(path), spec.replace(/\.js$/, '.ts'));
    if (!target.startsWith(root + '/')) continue;
    const a = nodeOf(path);
    const b = nodeOf(target);
    if (a === b) continue;
    if (!edges.has(a)) edges.set(a, new Map());
    if (!edges.get(a).has(b)) edges.get(a).set(b, `${relative(root, path)} -> ${spec}`);
  }
}
// Tarjan's strongly connected components.
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const on = new Set();
const sccs = [];
const visit = (v) => {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  on.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!idx.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const scc = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1) sccs.push(scc.sort());
  }
};
for (const v of edges.keys()) if (!idx.has(v)) visit(v);
if (process.argv.includes('--all')) {
  for (const [a, bs] of [...edges].sort()) console.log(`${a} -> ${[...bs.keys()].sort().join(', ')}`);
}
for (const scc of sccs) {
  console.log(`cycle: ${scc.join(', ')}`);
  for (const a of scc) {
    for (const [b, why] of edges.get(a) ?? []) if (scc.includes(b)) console.log(`  ${a} -> ${b}  (${why})`);
  }
}
process.exit(sccs.length ? 1 : 0);
