import { integer, jsonb, pgTable, primaryKey, text, timestamp, uuid, varchar } from 'drizzle-orm/pg-core';
import { projects } from './projects.js';

/**
 * One asynchronous Query API query (PostHog's QueryStatus), by its project and id (the client's
 * `client_query_id` or a new one). `run` names one run of it: reusing an id replaces the row, and the
 * runner only ever writes to the row of its own run. While the statement runs, `backend_pid` and
 * `backend_start` name the PostgreSQL backend running it, so any API process can cancel it and a
 * reader can tell that the process running it is gone; before that (waiting for a slot), `owner` names
 * the process's LISTEN connection, gone with the process. The row is kept until `expires_at`.
 */
export const query_statuses = pgTable(
  'query_statuses',
  {
    project_id: integer('project_id')
      .notNull()
      .references(() => projects.id, { onDelete: 'cascade' }),
    id: varchar('id', { length: 200 }).notNull(),
    run: uuid('run').notNull().defaultRandom(),
    /** running, complete, failed or cancelled. */
    state: varchar('state', { length: 20 }).notNull().default('running'),
    answer: jsonb('answer'),
    error_message: text('error_message'),
    start_time: timestamp('start_time', { withTimezone: true }).notNull().defaultNow(),
    pickup_time: timestamp('pickup_time', { withTimezone: true }),
    end_time: timestamp('end_time', { withTimezone: true }),
    backend_pid: integer('backend_pid'),
    backend_start: timestamp('backend_start', { withTimezone: true }),
    /** The application_name of the LISTEN connection of the process that runs the query. */
    owner: text('owner'),
    expires_at: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  // Expired rows are deleted per project (src/query/status-queries.ts), along the primary key.
  (t) => [primaryKey({ columns: [t.project_id, t.id] })],
);
