import type { RunTag } from '../queries.js';
import type { QueryEngine } from '../run.js';

/** What the insight kinds need to run their statements: the process's query engine, whose slot, an async tag. */
export interface Executor {
  engine: QueryEngine;
  organizationId: string;
  tag?: RunTag;
}
