-- Events become a table partitioned by month of `timestamp` (UTC months), so that retention drops whole
-- months and time-bounded queries read only the months they name. Drizzle does not model partitioning:
-- src/db/schema/events.ts describes the columns and indexes, this file makes the table by hand.
--
-- A unique index of a partitioned table must hold the partition key, so `(project_id, uuid)`, which makes
-- a retried event a no-op, is kept unique in `event_uuids`, written by the statements that write events.
-- Months get their partitions ahead of time (`events_ensure_partitions`, called by the server at start and
-- by the worker's periodic job, never by a request); an event of a month without one (far in the past, or a
-- partition not made yet) is stored in `events_default`, and moved to its month's partition when one is made.
--
-- The existing table's rows are copied, every one, then it is dropped.
ALTER TABLE "events" RENAME TO "events_unpartitioned";--> statement-breakpoint
ALTER TABLE "events_unpartitioned" DROP CONSTRAINT "events_project_uuid_unique";--> statement-breakpoint
ALTER TABLE "events_unpartitioned" DROP CONSTRAINT "events_project_id_projects_id_fk";--> statement-breakpoint
ALTER TABLE "events_unpartitioned" DROP CONSTRAINT "events_pkey";--> statement-breakpoint
DROP INDEX "events_project_timestamp_idx";--> statement-breakpoint
DROP INDEX "events_project_event_timestamp_idx";--> statement-breakpoint
DROP INDEX "events_project_distinct_id_idx";--> statement-breakpoint
DROP INDEX "events_project_person_idx";--> statement-breakpoint
-- The ids go on from the same sequence: exports and the listing's cursors order by (timestamp, id).
ALTER TABLE "events_unpartitioned" ALTER COLUMN "id" DROP DEFAULT;--> statement-breakpoint
ALTER SEQUENCE "events_id_seq" OWNED BY NONE;--> statement-breakpoint
CREATE TABLE "events" (
	"id" bigint DEFAULT nextval('events_id_seq'::regclass) NOT NULL,
	"uuid" uuid NOT NULL,
	"project_id" integer NOT NULL,
	"event" varchar(400) NOT NULL,
	"distinct_id" text NOT NULL,
	"properties" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"timestamp" timestamp (6) with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"elements_chain" text DEFAULT '' NOT NULL,
	"person_id" integer
) PARTITION BY RANGE ("timestamp");--> statement-breakpoint
ALTER SEQUENCE "events_id_seq" OWNED BY "events"."id";--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE TABLE "events_default" PARTITION OF "events" DEFAULT;--> statement-breakpoint
CREATE TABLE "event_uuids" (
	"project_id" integer NOT NULL,
	"uuid" uuid NOT NULL,
	"timestamp" timestamp (6) with time zone NOT NULL,
	CONSTRAINT "event_uuids_project_id_uuid_pk" PRIMARY KEY("project_id","uuid")
);--> statement-breakpoint
ALTER TABLE "event_uuids" ADD CONSTRAINT "event_uuids_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- The partition of the UTC month holding p_month, `events_pYYYY_MM`, made unless it exists: built beside the
-- table, given the default partition's rows of that month, then attached (which takes a lighter lock on
-- `events` than creating it as a partition would). True when it was made.
CREATE FUNCTION events_create_partition(p_month timestamptz) RETURNS boolean LANGUAGE plpgsql
-- A maintenance pass waits this long for a lock, then fails and is tried again by the next pass, so it never
-- queues every request behind a long query.
SET lock_timeout = '5s'
AS $$
DECLARE
  v_start timestamp := date_trunc('month', p_month AT TIME ZONE 'UTC');
  v_from timestamptz := v_start AT TIME ZONE 'UTC';
  v_to timestamptz := (v_start + interval '1 month') AT TIME ZONE 'UTC';
  v_name text := 'events_p' || to_char(v_start, 'YYYY_MM');
BEGIN
  IF to_regclass(format('public.%I', v_name)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE public.%I (LIKE public.events INCLUDING DEFAULTS)', v_name);
  EXECUTE format('WITH moved AS (DELETE FROM public.events_default WHERE "timestamp" >= $1 AND "timestamp" < $2
    RETURNING *) INSERT INTO public.%I SELECT * FROM moved', v_name) USING v_from, v_to;
  EXECUTE format('ALTER TABLE public.events ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)',
    v_name, v_from, v_to);
  RETURN true;
END;
$$;--> statement-breakpoint
-- The partitions of the month before p_now's to two months after it, and of every month of the last ten years
-- that has events in the default partition (a backfill of older events, a restored backup), except months that
-- end before p_keep_from (retention would drop them). Returns how many partitions were made.
CREATE FUNCTION events_ensure_partitions(p_now timestamptz, p_keep_from timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamp := date_trunc('month', p_now AT TIME ZONE 'UTC');
  v_month timestamp;
  v_made integer := 0;
BEGIN
  -- Processes starting together take turns.
  PERFORM pg_advisory_xact_lock(727276);
  FOR v_month IN
    SELECT m FROM generate_series(v_now - interval '1 month', v_now + interval '2 months', interval '1 month') AS m
    UNION
    SELECT DISTINCT date_trunc('month', d."timestamp" AT TIME ZONE 'UTC') FROM events_default AS d
    WHERE d."timestamp" >= (v_now - interval '10 years') AT TIME ZONE 'UTC'
      AND d."timestamp" < (v_now + interval '3 months') AT TIME ZONE 'UTC'
    ORDER BY 1
  LOOP
    IF p_keep_from IS NOT NULL AND (v_month + interval '1 month') AT TIME ZONE 'UTC' <= p_keep_from THEN
      CONTINUE;
    END IF;
    IF events_create_partition(v_month AT TIME ZONE 'UTC') THEN
      v_made := v_made + 1;
    END IF;
  END LOOP;
  RETURN v_made;
END;
$$;--> statement-breakpoint
-- Retention: drops every month partition that ends at or before p_cutoff, deletes the default partition's events
-- before it, and forgets the uuids of every event that is gone (those before the first month still kept).
CREATE FUNCTION events_drop_before(p_cutoff timestamptz, OUT dropped integer, OUT deleted bigint,
  OUT forgotten bigint) LANGUAGE plpgsql
SET lock_timeout = '5s'
AS $$
DECLARE
  v_part record;
  v_bound timestamptz := p_cutoff;
BEGIN
  PERFORM pg_advisory_xact_lock(727276);
  dropped := 0;
  FOR v_part IN
    SELECT c.relname AS name,
           to_date(substr(c.relname, 9), 'YYYY_MM')::timestamp AT TIME ZONE 'UTC' AS lower
    FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'public.events'::regclass AND c.relname ~ '^events_p[0-9]{4}_[0-9]{2}$'
    ORDER BY 2
  LOOP
    IF v_part.lower + interval '1 month' <= p_cutoff THEN
      EXECUTE format('DROP TABLE public.%I', v_part.name);
      dropped := dropped + 1;
    ELSIF v_part.lower < p_cutoff THEN
      -- This month straddles the cutoff and is kept whole, with its uuids.
      v_bound := least(v_bound, v_part.lower);
    END IF;
  END LOOP;
  DELETE FROM events_default WHERE "timestamp" < p_cutoff;
  GET DIAGNOSTICS deleted = ROW_COUNT;
  DELETE FROM event_uuids WHERE "timestamp" < v_bound;
  GET DIAGNOSTICS forgotten = ROW_COUNT;
END;
$$;--> statement-breakpoint
-- A partition for every month of the last ten years that has events (older ones stay in the default
-- partition), and for the months around now.
SELECT events_create_partition(m AT TIME ZONE 'UTC') FROM (
  SELECT DISTINCT date_trunc('month', "timestamp" AT TIME ZONE 'UTC') AS m FROM events_unpartitioned
  WHERE "timestamp" >= now() - interval '10 years' AND "timestamp" < now() + interval '3 months'
) AS months ORDER BY m;--> statement-breakpoint
SELECT events_ensure_partitions(now(), NULL);--> statement-breakpoint
INSERT INTO "events" ("id", "uuid", "project_id", "event", "distinct_id", "properties", "timestamp", "created_at",
  "elements_chain", "person_id")
SELECT "id", "uuid", "project_id", "event", "distinct_id", "properties", "timestamp", "created_at",
  "elements_chain", "person_id"
FROM "events_unpartitioned";--> statement-breakpoint
INSERT INTO "event_uuids" ("project_id", "uuid", "timestamp")
SELECT "project_id", "uuid", "timestamp" FROM "events_unpartitioned";--> statement-breakpoint
DROP TABLE "events_unpartitioned";--> statement-breakpoint
-- Indexes after the copy (built once per partition rather than row by row). Partitions made later get them
-- when attached.
CREATE INDEX "events_project_timestamp_idx" ON "events" USING btree ("project_id","timestamp" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_project_event_timestamp_idx" ON "events" USING btree ("project_id","event","timestamp" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_project_distinct_id_idx" ON "events" USING btree ("project_id","distinct_id","timestamp" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_project_person_idx" ON "events" USING btree ("project_id","person_id","timestamp" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "event_uuids_timestamp_brin" ON "event_uuids" USING brin ("timestamp");--> statement-breakpoint
-- ingest_plain_batch of 0020, its uuids checked and kept in event_uuids.
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
