-- The ingestion functions look rows up by key: a distinct id's person, a definition by its name.
-- Planned while a table is empty, or while its statistics say so (a database vacuumed when new, a
-- young install), a sequential scan looks cheaper than the index, and ingest_plain_batch keeps that
-- plan for the connection: each slice of a large /batch/ then scanned the growing table once per
-- distinct id (a 20 MiB batch took 31 s instead of 2.6 s). With sequential scans off inside these
-- two functions only, every lookup stays on its index whatever the statistics say.
ALTER FUNCTION ingest_plain_batch(integer, jsonb, jsonb, timestamptz, timestamptz, boolean, boolean)
  SET enable_seqscan = off;
--> statement-breakpoint
ALTER FUNCTION upsert_property_definitions(integer, jsonb, jsonb) SET enable_seqscan = off;
