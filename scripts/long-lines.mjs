// Lists the lines over 120 columns in the tracked TypeScript and scripts, and fails when there is one.
// Biome formats at 120 columns but cannot wrap a long string, template, regex or comment, so these are
// checked here. Columns are code points, not bytes (awk's length depends on the locale and the awk).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MAX = 120;
const files = execFileSync(
  'git',
  ['ls-files', '-z', '--', 'src/*.ts', 'test/*.ts', 'bench/*.ts', 'scripts/*.mjs', ':!generated'],
  { encoding: 'utf8' },
)
  .split('\0')
  .filter(Boolean);
let bad = 0;
for (const file of files) {
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const columns = [...line.replace(/\r$/, '')].length;
      if (columns > MAX) {
        console.log(`${file}:${i + 1}: ${columns} columns (at most ${MAX})`);
        bad++;
      }
    });
}
if (bad) {
  console.log(`${bad} line(s) over ${MAX} columns: split the string, SQL, regex or comment`);
  process.exit(1);
}
