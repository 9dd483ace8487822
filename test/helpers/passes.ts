import t from 'tap';

/**
 * CI runs the suite twice, on the embedded PostgreSQL and on the system's (`.ci/run` sets TEST_PASS=second
 * for the second). A file whose subject does not depend on the PostgreSQL server (the HTTP listener, the
 * configuration, the compilers, the browser pages) runs in the first pass only, as does one that starts a
 * private cluster from the embedded PostgreSQL binaries (the fault tests): it would run the very same way
 * twice. Run alone, with or without DATABASE_URL, a file always runs.
 */
export function firstPassOnly(subject: string, why = 'does not depend on the PostgreSQL server'): void {
  if (process.env.TEST_PASS !== 'second') return;
  t.plan(0, `${subject} ${why}: it ran in the first pass`);
  process.exit(0);
}

/** For a file that runs on a private cluster of its own (test/helpers/pg-cluster.ts), never on the suite's server. */
export function privateClusterOnly(subject: string): void {
  firstPassOnly(subject, 'runs on a private cluster of the embedded binaries, the same in both passes');
}
