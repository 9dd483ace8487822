CREATE TABLE "hog_function_versions" (
	"project_id" integer PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 1 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "hog_function_versions" ADD CONSTRAINT "hog_function_versions_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Every write to a project's Hog functions (created, changed, enabled, deleted, reordered, their filters
-- compiled again after the project's test account filters changed) bumps the project's version, so each
-- process's cache of runnable functions (src/hog-functions/runnable.ts) sees the change on the next
-- ingested batch, in every process, whatever code or SQL made the write. A project being deleted is skipped:
-- its version row goes with it.
CREATE FUNCTION hog_functions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed integer[];
BEGIN
  IF TG_OP = 'DELETE' THEN
    changed := ARRAY[OLD.project_id];
  ELSIF TG_OP = 'UPDATE' THEN
    changed := ARRAY[OLD.project_id, NEW.project_id];
  ELSE
    changed := ARRAY[NEW.project_id];
  END IF;
  INSERT INTO hog_function_versions (project_id)
    SELECT p.id FROM projects p WHERE p.id = ANY (changed)
    ON CONFLICT (project_id) DO UPDATE SET version = hog_function_versions.version + 1;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER hog_functions_changed AFTER INSERT OR UPDATE OR DELETE ON hog_functions
  FOR EACH ROW EXECUTE FUNCTION hog_functions_changed();
--> statement-breakpoint
INSERT INTO hog_function_versions (project_id) SELECT DISTINCT project_id FROM hog_functions;
