CREATE TABLE "event_properties" (
	"project_id" integer NOT NULL,
	"event" varchar(400) NOT NULL,
	"property" varchar(400) NOT NULL,
	CONSTRAINT "event_properties_project_id_event_property_pk" PRIMARY KEY("project_id","event","property")
);
--> statement-breakpoint
CREATE TABLE "property_definitions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" integer NOT NULL,
	"name" varchar(400) NOT NULL,
	"type" smallint DEFAULT 1 NOT NULL,
	"property_type" varchar(50),
	"is_numerical" boolean DEFAULT false NOT NULL,
	"description" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"verified" boolean DEFAULT false NOT NULL,
	"verified_at" timestamp with time zone,
	"verified_by_id" integer,
	"hidden" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_by_id" integer,
	CONSTRAINT "property_definitions_project_type_name_unique" UNIQUE("project_id","type","name")
);
--> statement-breakpoint
-- Keys stored before scoping was always a list (the CLI and creates that left it out stored null)
-- read as unrestricted, which the empty list also means.
UPDATE "personal_api_keys" SET "scoped_teams" = '{}' WHERE "scoped_teams" IS NULL;--> statement-breakpoint
UPDATE "personal_api_keys" SET "scoped_organizations" = '{}' WHERE "scoped_organizations" IS NULL;--> statement-breakpoint
ALTER TABLE "personal_api_keys" ALTER COLUMN "scoped_teams" SET DEFAULT '{}'::integer[];--> statement-breakpoint
ALTER TABLE "personal_api_keys" ALTER COLUMN "scoped_teams" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "personal_api_keys" ALTER COLUMN "scoped_organizations" SET DEFAULT '{}'::text[];--> statement-breakpoint
ALTER TABLE "personal_api_keys" ALTER COLUMN "scoped_organizations" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "autocapture_opt_out" boolean;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "heatmaps_opt_in" boolean;--> statement-breakpoint
ALTER TABLE "event_properties" ADD CONSTRAINT "event_properties_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "property_definitions" ADD CONSTRAINT "property_definitions_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "property_definitions" ADD CONSTRAINT "property_definitions_verified_by_id_users_id_fk" FOREIGN KEY ("verified_by_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "property_definitions" ADD CONSTRAINT "property_definitions_updated_by_id_users_id_fk" FOREIGN KEY ("updated_by_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "event_properties_project_property_idx" ON "event_properties" USING btree ("project_id","property");--> statement-breakpoint
-- The property definitions and event-property links of a capture batch, computed by ingestion
-- (src/capture/property-definitions.ts, deduplicated there), stored set-based in one statement that
-- ingestion runs together with the batch's events. Existing rows are left alone (no row lock, so
-- concurrent batches naming the same properties do not queue on them), except that a definition
-- whose type could not be told from its first value takes the first type seen later.
CREATE OR REPLACE FUNCTION upsert_property_definitions(p_project integer, p_definitions jsonb, p_links jsonb)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH input AS (
    SELECT x.* FROM jsonb_to_recordset(p_definitions) AS x(name text, type smallint, property_type text)
  ),
  created AS (
    INSERT INTO property_definitions (project_id, name, type, property_type, is_numerical)
    SELECT p_project, input.name, input.type, input.property_type, coalesce(input.property_type = 'Numeric', false)
    FROM input ORDER BY input.type, input.name
    ON CONFLICT (project_id, type, name) DO NOTHING
  ),
  typed AS (
    UPDATE property_definitions AS d
    SET property_type = input.property_type, is_numerical = (input.property_type = 'Numeric')
    FROM input
    WHERE d.project_id = p_project AND d.type = input.type AND d.name = input.name
      AND d.property_type IS NULL AND input.property_type IS NOT NULL
  )
  INSERT INTO event_properties (project_id, event, property)
  SELECT p_project, l.event, l.property FROM jsonb_to_recordset(p_links) AS l(event text, property text)
  ORDER BY l.event, l.property
  ON CONFLICT DO NOTHING;
END;
$$;
