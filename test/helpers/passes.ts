import t from 'tap';

/**
 * CI runs the suite twice, on the embedded PostgreSQL and on the system's (`.ci/run` sets TEST_PASS=second
 * for the second). A file whose subject does not depend on the PostgreSQL server (the HTTP listener, the
 * configuration, the compilers, the browser pages) runs in the first pass only; run alone, with or without
 * DATABASE_URL, it always runs.
 */
export function firstPassOnly(subject: string): void {
  if (process.env.TEST_PASS !== 'second') return;
  t.plan(0, `${subject} does not depend on the PostgreSQL server: it ran in the first pass`);
  process.exit(0);
}
