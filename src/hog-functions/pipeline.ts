import { randomUUID } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type { Db } from '../db/client.js';
import type { Config } from '../config.js';
import { secretBox, type SecretBox } from '../secrets/index.js';
import { deliveryRetryDelay } from './settings.js';
import { matchesFilters, resolveInput, resolveInputs, runHog, type LogLine, type RunResult } from './execute.js';
import { filterGlobals, invocationGlobals, type EventInput } from './globals.js';
import type { StoredMapping } from './mappings.js';
import { personsOf, type HogFunctionRow } from './queries.js';
import { runnableOf, type RunnableFunction } from './runnable.js';
import { enqueueDeliveries, type QueuedDelivery } from './queue.js';
import { passesMask, writeLogs, type MetricCounts, type MetricName } from './telemetry.js';
import { addMetrics } from './metric-writes.js';

type Json = Record<string, unknown>;

/** What ingestion's events look like to the pipeline (the capture module's CapturedEvent). */
export interface PipelineEvent {
  uuid: string;
  event: string;
  distinct_id: string;
  properties: Json;
  timestamp: Date;
  elements_chain: string;
}

export interface PipelineContext {
  db: Db;
  box: SecretBox;
  boss: () => Promise<PgBoss>;
  siteUrl: string;
  retryDelaySeconds: number;
  /** `hog_functions_version` keys the process's cache of the project's functions (0: it never had any). */
  project: { id: number; name?: string; hog_functions_version?: number };
}

const asInput = (e: PipelineEvent): EventInput => ({
  uuid: e.uuid,
  event: e.event,
  distinct_id: e.distinct_id,
  properties: e.properties,
  timestamp: e.timestamp.toISOString(),
  elements_chain: e.elements_chain,
});

/** Counters and logs of one batch, written once at its end. */
class Tally {
  private counts: MetricCounts = new Map();
  readonly logs = new Map<string, { fn: HogFunctionRow; lines: LogLine[] }>();
  add(fn: HogFunctionRow, name: MetricName) {
    let names = this.counts.get(fn.id);
    if (!names) this.counts.set(fn.id, (names = new Map()));
    names.set(name, (names.get(name) ?? 0) + 1);
  }
  log(fn: HogFunctionRow, lines: LogLine[]) {
    const entry = this.logs.get(fn.id) ?? { fn, lines: [] };
    entry.lines.push(...lines);
    this.logs.set(fn.id, entry);
  }
  async flush(db: Db) {
    if (this.counts.size) await addMetrics(db, this.counts);
    for (const { fn, lines } of this.logs.values()) await writeLogs(db, fn, randomUUID(), lines);
  }
}

/** VM time one transformation may spend on one capture request's batch (the runner caps each event at 100 ms). */
const BATCH_BUDGET_MS = 1_000;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Applies a transformation's answer to the event: properties, and the name or distinct id if it set them. */
function applyResult(e: PipelineEvent, result: unknown): boolean {
  if (!result || typeof result !== 'object' || Array.isArray(result)) return false;
  const r = result as Json;
  if (r.properties && typeof r.properties === 'object' && !Array.isArray(r.properties))
    e.properties = r.properties as Json;
  if (typeof r.event === 'string' && r.event) e.event = r.event;
  if (typeof r.distinct_id === 'string' && r.distinct_id) e.distinct_id = r.distinct_id;
  return true;
}

async function transform(ctx: PipelineContext, fns: RunnableFunction[], batch: PipelineEvent[], tally: Tally) {
  const out: PipelineEvent[] = [];
  // A transformation that ran out of time, or spent its share of the batch, is skipped for the rest of the
  // batch: one slow program may not hold ingestion for every event of a large batch.
  const timedOut = new Set<string>();
  const spent = new Map<string, number>();
  const project = { id: ctx.project.id, name: ctx.project.name ?? '' };
  for (const original of batch) {
    let e: PipelineEvent | null = original;
    // What the functions read of the event, built when first read and again only after a function changed it.
    let input: EventInput | undefined;
    let forFilters: Json | undefined;
    for (const { row: fn, inputs, secrets } of fns) {
      if (!e || !fn.bytecode) break;
      if (timedOut.has(fn.id)) continue;
      const seen = e;
      try {
        if (!matchesFilters(fn.filters, () => (forFilters ??= filterGlobals((input ??= asInput(seen)), null)))) {
          tally.add(fn, 'filtered');
          continue;
        }
      } catch (err) {
        tally.log(fn, [
          { level: 'ERROR', message: `Error filtering event: ${(err as Error).message}`, timestamp: new Date() },
        ]);
        continue;
      }
      const started = Date.now();
      let run: RunResult;
      try {
        const globals = invocationGlobals(ctx.siteUrl, project, (input ??= asInput(e)), null, fn);
        globals.inputs = resolveInputs(inputs, globals);
        run = await runHog(fn.bytecode, globals, { secrets });
      } catch (err) {
        run = { result: null, error: (err as Error).message, logs: [] };
      }
      const took = Date.now() - started;
      if (took > 20) await yieldToLoop();
      spent.set(fn.id, (spent.get(fn.id) ?? 0) + took);
      if ((spent.get(fn.id) ?? 0) > BATCH_BUDGET_MS && !timedOut.has(fn.id)) {
        timedOut.add(fn.id);
        const message = `Spent over ${BATCH_BUDGET_MS} ms on this batch: skipped for the rest of it.`;
        tally.log(fn, [{ level: 'WARN', message, timestamp: new Date() }]);
      }
      const errors = run.logs.filter((l) => l.level !== 'DEBUG');
      if (run.error) {
        // As PostHog: a failing transformation leaves the event as it was.
        tally.add(fn, 'failed');
        tally.log(fn, [
          ...errors,
          { level: 'WARN', message: `Event ${e.uuid} passed on unchanged.`, timestamp: new Date() },
        ]);
        if (/timed out/i.test(run.error)) timedOut.add(fn.id);
        continue;
      }
      if (errors.length) tally.log(fn, errors);
      if (run.result === null || run.result === undefined) {
        tally.add(fn, 'dropped');
        e = null;
      } else if (applyResult(e, run.result)) {
        tally.add(fn, 'succeeded');
        input = undefined;
        forFilters = undefined;
      } else {
        tally.add(fn, 'failed');
        tally.log(fn, [
          { level: 'WARN', message: 'The function returned no event object; event unchanged.', timestamp: new Date() },
        ]);
      }
    }
    if (e) out.push(e);
  }
  return out;
}

async function destinationJobs(ctx: PipelineContext, fns: HogFunctionRow[], batch: PipelineEvent[], tally: Tally) {
  const jobs: QueuedDelivery[] = [];
  const inputs = batch.map(asInput);
  // Destinations see the event's person as ingestion has just left it (transformations, as PostHog's, see none).
  const persons = await personsOf(ctx.db, ctx.project.id, [...new Set(batch.map((e) => e.distinct_id))]);
  const forFilters: (Json | undefined)[] = [];
  for (const fn of fns) {
    for (const [i, input] of inputs.entries()) {
      const person = persons.get(input.distinct_id) ?? null;
      if (!matchesFilters(fn.filters, () => (forFilters[i] ??= filterGlobals(input, person)))) {
        tally.add(fn, 'filtered');
        continue;
      }
      const masking = fn.masking as Json | null;
      if (masking?.bytecode) {
        const globals = invocationGlobals(
          ctx.siteUrl,
          { id: ctx.project.id, name: ctx.project.name ?? '' },
          input,
          person,
          fn,
        );
        const hash = String(resolveInput(masking.bytecode, globals));
        const passes = await passesMask(
          ctx.db,
          fn.id,
          hash,
          Number(masking.ttl),
          (masking.threshold as number) ?? null,
        );
        if (!passes) {
          tally.add(fn, 'masked');
          continue;
        }
      }
      // PostHog's rule: a function with mappings makes one delivery per mapping whose filters match too.
      const mappings = Array.isArray(fn.mappings) ? (fn.mappings as unknown as StoredMapping[]) : null;
      if (!mappings) jobs.push({ function_id: fn.id, project_id: ctx.project.id, event: input });
      else {
        for (const [mapping, m] of mappings.entries()) {
          if (matchesFilters(m.filters, () => (forFilters[i] ??= filterGlobals(input, person)))) {
            jobs.push({ function_id: fn.id, project_id: ctx.project.id, event: input, mapping });
          } else tally.add(fn, 'filtered');
        }
      }
    }
  }
  return jobs;
}

/**
 * Ingestion's one call into Hog functions: the enabled transformations run in order on each matching
 * event (they may change or drop it), `store` stores what is left, then each matching event becomes a
 * delivery job per enabled destination (masking applied first). Deliveries happen later, in the worker.
 */
export async function ingestWithHogFunctions(
  ctx: PipelineContext,
  batch: PipelineEvent[],
  store: (batch: PipelineEvent[]) => Promise<void>,
): Promise<void> {
  const fns = await runnableOf(ctx.db, ctx.box, ctx.project.id, ctx.project.hog_functions_version ?? 0);
  if (!fns.length) return store(batch);
  const tally = new Tally();
  const transformations = fns.filter((f) => f.row.type === 'transformation');
  const destinations = fns.filter((f) => f.row.type === 'destination').map((f) => f.row);
  const kept = transformations.length ? await transform(ctx, transformations, batch, tally) : batch;
  if (kept.length) await store(kept);
  const jobs = destinations.length ? await destinationJobs(ctx, destinations, kept, tally) : [];
  await enqueueDeliveries(await ctx.boss(), ctx.retryDelaySeconds, jobs);
  await tally.flush(ctx.db).catch(() => undefined);
}

/** What ingestion hands over: the server's database, configuration and job engine (no request). */
export interface IngestServer {
  db: Db;
  config: Config;
  jobs: { boss(): Promise<PgBoss> };
}

/** Ingestion's entry: `store` stores the events the project's transformations leave (all, when it has none). */
export function ingestThroughHogFunctions(
  server: IngestServer,
  project: PipelineContext['project'],
  batch: PipelineEvent[],
  store: (batch: PipelineEvent[]) => Promise<void>,
): Promise<void> {
  const ctx: PipelineContext = {
    db: server.db,
    box: secretBox(server.config),
    boss: () => server.jobs.boss(),
    siteUrl: server.config.siteUrl ?? `http://${server.config.host}:${server.config.port}`,
    retryDelaySeconds: deliveryRetryDelay(server.config),
    project,
  };
  return ingestWithHogFunctions(ctx, batch, store);
}
