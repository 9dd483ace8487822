import { Resolver } from 'node:dns/promises';

/** Answers that mean "there is no such record", as opposed to a resolver that failed. */
const NO_RECORD = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * The TXT values at `name`, each record's chunks joined, through `servers` when given (`host` or
 * `host:port`) or else the system's resolver. No record is an empty list; a failing resolver throws.
 */
export async function resolveTxt(name: string, servers: string[] | undefined): Promise<string[]> {
  const resolver = new Resolver({ timeout: 3_000, tries: 2 });
  if (servers?.length) resolver.setServers(servers);
  try {
    const records = await resolver.resolveTxt(name);
    return records.map((chunks) => chunks.join(''));
  } catch (err) {
    if (NO_RECORD.has((err as { code?: string }).code ?? '')) return [];
    throw err;
  }
}
