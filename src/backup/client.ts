import type { Sql } from 'postgres';
import { socketOptions } from '../db/client.js';

/** A postgres.js client of its own for COPY's streams, on the server's database (embedded or not). */
export async function copyClient(url: string): Promise<Sql> {
  const { default: postgres } = await import('postgres');
  const socket = socketOptions(url);
  return postgres(socket.url, { ...(socket.host ? { host: socket.host } : {}), max: 1, onnotice: () => {} });
}
