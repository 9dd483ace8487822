// One line of the server's JSON log, for what is said before (or outside) Fastify's logger: the same
// fields pino writes (level as a number, time in ms, pid, hostname, msg), on stdout with the rest.
import { hostname } from 'node:os';

const LEVELS = { info: 30, warn: 40, error: 50 } as const;

export function logLine(level: keyof typeof LEVELS, msg: string, fields: Record<string, unknown> = {}): void {
  const line = { level: LEVELS[level], time: Date.now(), pid: process.pid, hostname: hostname(), ...fields, msg };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
