import { sql } from 'drizzle-orm';
import { events } from '../db/schema/index.js';
import type { Scope } from './compiler.js';

export { HogQLError, printExpr, printSelect, type Expr, type SelectField, type SelectQuery } from './ast.js';
export { EVENT_FIELDS, PARSE_FAILED, parseCondition, parseExpr, parseSelect, type ParseOptions } from './parser.js';
export { compileCondition, compileJsonValue, valueType, type ColumnType, type Scope } from './compiler.js';

/**
 * The events table as queries see it, for SQL that selects `FROM events`. `person_id` is the person's
 * UUID (the column holds the persons row id), as PostHog exposes it.
 */
export const eventsScope: Scope = {
  properties: sql`${events.properties}`,
  column(name) {
    switch (name) {
      case 'uuid':
        return { sql: sql`${events.uuid}`, type: 'uuid' };
      case 'event':
        return { sql: sql`${events.event}`, type: 'text' };
      case 'distinct_id':
        return { sql: sql`${events.distinct_id}`, type: 'text' };
      case 'timestamp':
        return { sql: sql`${events.timestamp}`, type: 'timestamp' };
      case 'created_at':
        return { sql: sql`${events.created_at}`, type: 'timestamp' };
      case 'elements_chain':
        return { sql: sql`${events.elements_chain}`, type: 'text' };
      case 'person_id':
        return { sql: sql`(select p.uuid from persons p where p.id = ${events.person_id})`, type: 'uuid' };
      case 'properties':
        return { sql: sql`${events.properties}`, type: 'json' };
      case 'team_id':
        return { sql: sql`${events.project_id}`, type: 'integer' };
      default:
        return undefined;
    }
  },
};
