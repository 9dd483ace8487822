// Lists the lines over 120 columns in the tracked TypeScript and scripts, and the test files over 400 lines
// (a test file holds one operation group; past that it wants splitting), and fails when there is one.
// Biome formats at 120 columns but cannot wrap a long string, template, regex or comment, so these are
// checked here. Columns are code points, not bytes (awk's length depends on the locale and the awk).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MAX = 120;
const TEST_MAX_LINES = 400;
const files = execFileSync(
  'git',
  ['ls-files', '-z', '--', 'src/*.ts', 'test/*.ts', 'bench/*.ts', 'scripts/*.mjs', ':!generated'],
  { encoding: 'utf8' },
)
  .split('\0')
  .filter(Boolean);
let bad = 0;
for (const file of files) {
  const lines = readFileSync(file, 'utf8').replace(/\n$/, '').split('\n');
  if (file.endsWith('.test.ts') && lines.length > TEST_MAX_LINES) {
    console.log(`${file}: ${lines.length} lines (a test file holds at most ${TEST_MAX_LINES}: split it)`);
    bad++;
  }
  lines.forEach((line, i) => {
    const columns = [...line.replace(/\r$/, '')].length;
    if (columns > MAX) {
      console.log(`${file}:${i + 1}: ${columns} columns (at most ${MAX})`);
      bad++;
    }
  });
}
if (bad) {
  console.log(`${bad} line(s) over ${MAX} columns or test files too long: split the string, SQL, regex or comment`);
  process.exit(1);
}
