import type { Db } from '../db/client.js';
import type { SecretBox } from '../secrets/index.js';
import { openInputs, secretValues } from './inputs.js';
import { runnableFunctions, type HogFunctionRow } from './queries.js';

type Json = Record<string, unknown>;

/** A function ready to run on events: its row, its inputs with the secret ones opened, and its secret values. */
export interface RunnableFunction {
  row: HogFunctionRow;
  inputs: Record<string, Json>;
  secrets: string[];
}

/** Projects whose functions one process keeps; past this the least recently loaded project is dropped. */
const MAX_PROJECTS = 5_000;

const prepare = (box: SecretBox, row: HogFunctionRow): RunnableFunction => ({
  row,
  inputs: openInputs(box, row),
  secrets: secretValues(box, row),
});

/**
 * The enabled transformations and destinations of each project ingestion has seen, read once per
 * process and kept until the project's Hog function version changes. The version is bumped by a trigger
 * on every write to `hog_functions` (drizzle/0028_hog_function_versions.sql) and read with the project
 * on every capture request, so the next batch after a change, in any process, runs what is stored now.
 */
class RunnableCache {
  private entries = new Map<number, { version: number; fns: Promise<RunnableFunction[]> }>();

  get(db: Db, box: SecretBox, projectId: number, version: number): Promise<RunnableFunction[]> {
    const hit = this.entries.get(projectId);
    if (hit && hit.version === version) return hit.fns;
    // Rows read now are at least as new as `version`: a change racing with this load bumps the version
    // again, and the next batch loads anew.
    const fns = runnableFunctions(db, projectId).then((rows) => rows.map((row) => prepare(box, row)));
    const entry = { version, fns };
    fns.catch(() => {
      if (this.entries.get(projectId) === entry) this.entries.delete(projectId);
    });
    this.entries.delete(projectId);
    this.entries.set(projectId, entry);
    if (this.entries.size > MAX_PROJECTS) this.entries.delete(this.entries.keys().next().value as number);
    return fns;
  }
}

/** One cache per database handle: a process holds one; tests that open several databases get one each. */
const caches = new WeakMap<Db, RunnableCache>();

export function runnableOf(db: Db, box: SecretBox, projectId: number, version: number): Promise<RunnableFunction[]> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new RunnableCache()));
  return cache.get(db, box, projectId, version);
}
