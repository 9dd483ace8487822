ALTER TABLE "event_uuids" DROP CONSTRAINT "event_uuids_project_id_projects_id_fk";
--> statement-breakpoint
ALTER TABLE "events" DROP CONSTRAINT "events_project_id_projects_id_fk";
--> statement-breakpoint
-- The two foreign keys above were checked once per inserted row (a fifth of PostgreSQL's time at 100 events a
-- request, measured with perf). Ingestion now key-share-locks the project row once per statement, as the
-- checks did, and a project's events and uuids go with it, as the cascade did.
CREATE FUNCTION projects_delete_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM events WHERE events.project_id = OLD.id;
  DELETE FROM event_uuids WHERE event_uuids.project_id = OLD.id;
  RETURN OLD;
END;
$$;--> statement-breakpoint
CREATE TRIGGER projects_delete_events AFTER DELETE ON projects FOR EACH ROW EXECUTE FUNCTION projects_delete_events();
--> statement-breakpoint
-- What the foreign keys checked for every row, once for a statement's rows: the project exists, and is not
-- deleted before the transaction ends (a deletion waits for the lock, then deletes what was stored).
CREATE FUNCTION events_lock_project(p_project integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM FROM projects WHERE projects.id = p_project FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'insert or update on table "events" violates foreign key constraint: project % does not exist',
      p_project USING ERRCODE = 'foreign_key_violation';
  END IF;
END;
$$;--> statement-breakpoint
-- ingest_plain_batch of 0026, checking its project once.
CREATE OR REPLACE FUNCTION ingest_plain_batch(
  p_project integer,
  p_events jsonb,
  p_ids jsonb,
  p_now timestamptz,
  p_seen_before timestamptz,
  p_first boolean,
  p_skip_stored boolean
) RETURNS void LANGUAGE plpgsql
-- Planned once per connection: custom plans would be planned again on every call, the skip-stored
-- test making the generic plan look dearer than it is.
SET plan_cache_mode = force_generic_plan
-- As 0016 set it: every lookup stays on its index whatever the statistics say.
SET enable_seqscan = off
AS $$
DECLARE
  v_locked integer[];
  v_moved boolean;
BEGIN
  PERFORM events_lock_project(p_project);
  SELECT coalesce(array_agg(ids.person_id ORDER BY ids.person_id), '{}') INTO v_locked
  FROM (
    SELECT DISTINCT (SELECT link.person_id FROM person_distinct_ids AS link
                     WHERE link.project_id = p_project AND link.distinct_id = d) AS person_id
    FROM jsonb_array_elements_text(p_ids) AS d
  ) AS ids
  WHERE ids.person_id IS NOT NULL;
  PERFORM pg_advisory_xact_lock_shared(727275, person) FROM unnest(v_locked) AS person;

  WITH input AS (
    SELECT x.* FROM jsonb_to_recordset(p_events) AS x(
      n int, uuid uuid, event text, distinct_id text, properties jsonb, timestamp timestamptz,
      elements_chain text, person boolean)
    WHERE NOT (p_skip_stored AND EXISTS (
      SELECT FROM event_uuids AS e WHERE e.project_id = p_project AND e.uuid = x.uuid))
  ),
  wanted AS (SELECT DISTINCT input.distinct_id FROM input WHERE input.person),
  -- One primary-key lookup per id: a plan that no missing statistics can turn into a scan.
  looked_up AS (
    SELECT w.distinct_id, (SELECT link.person_id FROM person_distinct_ids AS link
                           WHERE link.project_id = p_project AND link.distinct_id = w.distinct_id) AS person_id
    FROM wanted AS w
  ),
  known AS (SELECT * FROM looked_up WHERE looked_up.person_id IS NOT NULL),
  unknown AS (
    SELECT looked_up.distinct_id, nextval(pg_get_serial_sequence('persons', 'id'))::int AS person_id
    FROM looked_up WHERE looked_up.person_id IS NULL
  ),
  mapping AS (SELECT * FROM known UNION ALL SELECT * FROM unknown),
  -- A uuid stored meanwhile (a concurrent retry) fails this insert with a unique violation, and the batch
  -- is stored again skipping stored uuids, as the unique index of the unpartitioned table did.
  uuids AS (
    INSERT INTO event_uuids (project_id, uuid, timestamp)
    SELECT p_project, i.uuid, i.timestamp FROM input AS i
  ),
  stored AS (
    INSERT INTO events (uuid, project_id, event, distinct_id, properties, timestamp, elements_chain, person_id)
    SELECT i.uuid, p_project, i.event, i.distinct_id, i.properties, i.timestamp, i.elements_chain,
           CASE WHEN i.person THEN m.person_id END
    FROM input AS i LEFT JOIN mapping AS m ON m.distinct_id = i.distinct_id
    ORDER BY i.n
    RETURNING events.event, events.person_id
  ),
  born AS (SELECT * FROM unknown WHERE unknown.person_id IN (SELECT stored.person_id FROM stored)),
  created AS (
    INSERT INTO persons (id, uuid, project_id, created_at)
    SELECT born.person_id, gen_random_uuid(), p_project,
           (SELECT min(i.timestamp) FROM input AS i WHERE i.distinct_id = born.distinct_id AND i.person)
    FROM born ORDER BY born.person_id
  ),
  linked AS (
    INSERT INTO person_distinct_ids (project_id, distinct_id, person_id)
    SELECT p_project, born.distinct_id, born.person_id FROM born
  ),
  names AS (SELECT DISTINCT stored.event FROM stored),
  -- last_seen_at moves at most once a minute, so that a busy name is not a hot row.
  created_definitions AS (
    INSERT INTO event_definitions (project_id, name, created_at, last_seen_at, updated_at)
    SELECT p_project, names.event, p_now, p_now, p_now FROM names ORDER BY names.event
    ON CONFLICT (project_id, name) DO NOTHING
  ),
  seen_definitions AS (
    UPDATE event_definitions AS d SET last_seen_at = p_now
    WHERE d.project_id = p_project AND d.name IN (SELECT names.event FROM names)
      AND (d.last_seen_at IS NULL OR d.last_seen_at < p_seen_before)
  ),
  ingested AS (
    UPDATE projects SET ingested_event = true
    WHERE p_first AND projects.id = p_project AND NOT projects.ingested_event
  )
  SELECT EXISTS (SELECT FROM known WHERE known.person_id <> ALL (v_locked)) INTO v_moved;

  IF v_moved THEN
    RAISE EXCEPTION 'a distinct id of the batch moved to another person' USING ERRCODE = 'serialization_failure';
  END IF;
END;
$$;
