CREATE TABLE "event_count_deltas" (
	"project_id" integer NOT NULL,
	"event" varchar(400) NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"n" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "event_counts" (
	"project_id" integer NOT NULL,
	"event" varchar(400) NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	"n" bigint NOT NULL,
	CONSTRAINT "event_counts_project_id_event_hour_pk" PRIMARY KEY("project_id","event","hour")
);
--> statement-breakpoint
-- Each statement's inserted and deleted events, counted per project, name and UTC hour (date_bin does not
-- depend on the session's TimeZone). Statements on a partition itself (a partition made or dropped by the
-- maintenance functions below) fire no trigger of `events`: moving rows between partitions changes no
-- count, and retention recounts what it keeps.
CREATE FUNCTION events_count_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_count_deltas (project_id, event, hour, n)
  SELECT project_id, event, date_bin('1 hour', "timestamp", timestamptz '1970-01-01 00:00:00+00'), count(*)
  FROM new_rows GROUP BY 1, 2, 3;
  RETURN NULL;
END;
$$;--> statement-breakpoint
CREATE FUNCTION events_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_count_deltas (project_id, event, hour, n)
  SELECT project_id, event, date_bin('1 hour', "timestamp", timestamptz '1970-01-01 00:00:00+00'), -count(*)
  FROM old_rows GROUP BY 1, 2, 3;
  RETURN NULL;
END;
$$;--> statement-breakpoint
CREATE TRIGGER events_count_inserted AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_count_inserted();--> statement-breakpoint
CREATE TRIGGER events_count_deleted AFTER DELETE ON events REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION events_count_deleted();--> statement-breakpoint
-- The deltas folded into the counts, in one transaction (readers see the deltas or the counts, never both
-- or neither); passes that meet take turns. Returns how many delta rows were folded.
CREATE FUNCTION event_counts_fold() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  v_folded bigint;
BEGIN
  IF NOT pg_try_advisory_xact_lock(727277) THEN
    RETURN 0;
  END IF;
  WITH moved AS (DELETE FROM event_count_deltas RETURNING project_id, event, hour, n),
  summed AS (SELECT project_id, event, hour, sum(n)::bigint AS n, count(*) AS rows FROM moved GROUP BY 1, 2, 3),
  merged AS (
    INSERT INTO event_counts AS c (project_id, event, hour, n)
    SELECT project_id, event, hour, n FROM summed
    ON CONFLICT (project_id, event, hour) DO UPDATE SET n = c.n + excluded.n
  )
  SELECT coalesce(sum(rows), 0) INTO v_folded FROM summed;
  DELETE FROM event_counts WHERE n = 0;
  RETURN v_folded;
END;
$$;--> statement-breakpoint
-- A project's counts go with its events.
CREATE OR REPLACE FUNCTION projects_delete_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM events WHERE events.project_id = OLD.id;
  DELETE FROM event_uuids WHERE event_uuids.project_id = OLD.id;
  DELETE FROM event_count_deltas WHERE event_count_deltas.project_id = OLD.id;
  DELETE FROM event_counts WHERE event_counts.project_id = OLD.id;
  RETURN OLD;
END;
$$;--> statement-breakpoint
-- events_drop_before of 0026, which then counts again the hours before the cutoff's next hour from the events
-- kept (the month straddling the cutoff): dropping a partition fires no trigger.
CREATE OR REPLACE FUNCTION events_drop_before(p_cutoff timestamptz, OUT dropped integer, OUT deleted bigint,
  OUT forgotten bigint) LANGUAGE plpgsql
SET lock_timeout = '5s'
AS $$
DECLARE
  v_part record;
  v_bound timestamptz := p_cutoff;
  v_hours timestamptz := date_bin('1 hour', p_cutoff, timestamptz '1970-01-01 00:00:00+00') + interval '1 hour';
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
  -- One statement, so one snapshot: the deltas and counts it removes are those of the events it counts again
  -- (as deltas); a statement committing meanwhile keeps its own delta. No fold runs meanwhile.
  PERFORM pg_advisory_xact_lock(727277);
  WITH gone_deltas AS (DELETE FROM event_count_deltas WHERE hour < v_hours RETURNING 1),
  gone_counts AS (DELETE FROM event_counts WHERE hour < v_hours RETURNING 1)
  INSERT INTO event_count_deltas (project_id, event, hour, n)
  SELECT project_id, event, date_bin('1 hour', "timestamp", timestamptz '1970-01-01 00:00:00+00'), count(*)
  FROM events WHERE "timestamp" < v_hours GROUP BY 1, 2, 3;
END;
$$;--> statement-breakpoint
INSERT INTO event_counts (project_id, event, hour, n)
SELECT project_id, event, date_bin('1 hour', "timestamp", timestamptz '1970-01-01 00:00:00+00'), count(*)
FROM events GROUP BY 1, 2, 3;
