import { readFileSync } from 'node:fs';

/**
 * The process's soft limit on open files (RLIMIT_NOFILE), from /proc/self/limits on Linux;
 * undefined elsewhere or when unlimited. Every socket is a file: past this limit `accept` fails and
 * neither new clients nor new database connections get through.
 */
export function openFileLimit(limits = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(limits, 'utf8');
  } catch {
    return undefined;
  }
  const soft = /^Max open files\s+(\S+)/m.exec(text)?.[1];
  const n = Number(soft);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
