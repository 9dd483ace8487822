// The throttle's own cost per request, without HTTP: sequential RateLimiter.hit calls (one UPSERT each)
// against `select 1` round trips on the same pool, on DATABASE_URL; one key (the same row every time) and
// a new key per call (a new row each). `node --import tsx bench/rate-limit-statement.ts`.
import { sql } from 'drizzle-orm';
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { openDatabase } from '../src/db/client.js';
import { parseRate, RateLimiter } from '../src/http/rate-limit.js';
import { queryRoleName } from '../src/query/role-queries.js';

const base = process.env.DATABASE_URL;
if (!base) throw new Error('DATABASE_URL is required');
const n = Number(process.env.BENCH_CALLS ?? 5000);
const admin = postgres(base, { max: 1, onnotice: () => {} });
const name = `bench_rls_${randomBytes(4).toString('hex')}`;
await admin.unsafe(`create database ${name}`);
const u = new URL(base);
u.pathname = `/${name}`;
const database = await openDatabase({ url: u.toString(), poolSize: 4 });
const limiter = new RateLimiter(database.db, 'api', [parseRate('100000000/minute'), parseRate('100000000/hour')]);

async function timed(what: string, fn: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 500; i++) await fn(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn(i);
  const us = Number(process.hrtime.bigint() - start) / 1000 / n;
  console.log(`| ${what} | ${n} | ${us.toFixed(0)} µs |`);
}

console.log('| call | sequential calls | mean per call |\n|---|---:|---:|');
for (let round = 0; round < 2; round++) {
  await timed('select 1', () => database.db.execute(sql`select 1`));
  await timed('hit, one key', () => limiter.hit('one'));
  await timed('hit, a new key each call', (i) => limiter.hit(`k${round}-${i}`));
}
await database.close();
await admin.unsafe(`drop database ${name} with (force)`);
await admin.unsafe(`drop role if exists ${queryRoleName(name)}`);
await admin.end();
