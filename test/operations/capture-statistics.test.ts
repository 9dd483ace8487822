// Ingestion's lookups by key stay on their indexes whatever the tables' statistics say. Planned
// while a table looked empty (a database vacuumed when new), ingest_plain_batch kept a sequential
// scan of person_distinct_ids for the connection, and each slice of a large /batch/ then scanned the
// growing table once per distinct id (a 20 MiB batch: 31 s instead of 2.6 s).
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { rows } from '../helpers/fingerprint.js';

const ctx = await buildTestApp(t);
const { db } = ctx;

/** One slice as the server sends it: each event with its person, 300 distinct ids. */
function slice(from: number) {
  const events = Array.from({ length: 600 }, (_, i) => ({
    n: from + i,
    uuid: randomUUID(),
    event: `e${i % 3}`,
    distinct_id: `u-${i % 300}`,
    properties: { i },
    timestamp: new Date().toISOString(),
    elements_chain: '',
    person: true,
  }));
  const ids = [...new Set(events.map((e) => e.distinct_id))];
  return { events: JSON.stringify(events), ids: JSON.stringify(ids) };
}

t.test('ingest_plain_batch looks persons and definitions up by index after an empty table was analyzed', async (t) => {
  const a = await makeTenant(db);
  await db.execute(sql`vacuum analyze person_distinct_ids, persons, event_definitions, events`);
  const scans = await db.transaction(async (tx) => {
    for (const from of [0, 600, 1200]) {
      const { events, ids } = slice(from);
      await tx.execute(sql`select ingest_plain_batch(${a.project.id}::int, ${events}::jsonb, ${ids}::jsonb,
        now(), now() - interval '1 minute', false, false)`);
    }
    // This transaction's own counters: synchronous, unlike the cumulative statistics.
    return rows<{ relname: string; seq_scan: number; idx_scan: number }>(
      tx,
      sql`select relname, seq_scan::int, coalesce(idx_scan, 0)::int as idx_scan from pg_stat_xact_user_tables
        where relname in ('person_distinct_ids', 'event_definitions') order by relname`,
    );
  });
  const [definitions, links] = scans;
  t.equal(links?.relname, 'person_distinct_ids');
  t.equal(links?.seq_scan, 0, 'no sequential scan of person_distinct_ids');
  t.ok((links?.idx_scan ?? 0) >= 600, 'each distinct id looked up by index');
  t.equal(definitions?.seq_scan, 0, 'no sequential scan of event_definitions');
  const [stored] = await rows<{ n: number }>(
    db,
    sql`select count(*)::int as n from events where project_id = ${a.project.id}`,
  );
  t.equal(stored?.n, 1800, 'the three slices stored');
});
