// Memory of the processes behind a benchmark run, read from /proc: the API process, and the
// PostgreSQL server it talks to (its postmaster and every child), reported apart.
import { readdirSync, readFileSync } from 'node:fs';
import postgres from 'postgres';
import { socketOptions } from '../src/db/client.js';

/** A postgres.js client for a URL in libpq's form (the embedded cluster's socket folder is `?host=`). */
export function sqlClient(url: string, max = 1): postgres.Sql {
  const { url: plain, host } = socketOptions(url);
  return postgres(plain, { ...(host ? { host } : {}), max, onnotice: () => {} });
}

const statusKb = (pid: number, field: string): number => {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
};

/** Proportional set size: shared pages (PostgreSQL's shared buffers) divided among the processes mapping them. */
const pssKb = (pid: number): number => {
  try {
    return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
};

export const rssMbOf = (pid: number): number => Math.round(statusKb(pid, 'VmRSS') / 1024);

/**
 * The PostgreSQL server behind `url`: its postmaster (the parent of this connection's backend) and
 * every process it started. RSS counts shared buffers once per process; PSS shares them out.
 */
export async function postgresMemory(url: string): Promise<{ processes: number; rssMb: number; pssMb: number }> {
  const sql = sqlClient(url);
  try {
    const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
    const stat = readFileSync(`/proc/${row!.pid}/stat`, 'utf8');
    const postmaster = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const pids = [postmaster];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const s = readFileSync(`/proc/${name}/stat`, 'utf8');
        if (Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) pids.push(Number(name));
      } catch {}
    }
    const sum = (f: (pid: number) => number) => Math.round(pids.reduce((n, pid) => n + f(pid), 0) / 1024);
    return { processes: pids.length, rssMb: sum((pid) => statusKb(pid, 'VmRSS')), pssMb: sum(pssKb) };
  } finally {
    await sql.end();
  }
}
