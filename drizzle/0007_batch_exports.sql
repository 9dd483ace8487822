CREATE TABLE "batch_export_backfills" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" integer NOT NULL,
	"batch_export_id" uuid NOT NULL,
	"start_at" timestamp with time zone,
	"end_at" timestamp with time zone,
	"adjusted_start_at" timestamp with time zone,
	"status" varchar(64) NOT NULL,
	"total_records_count" bigint,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"last_updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "batch_export_logs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"project_id" integer NOT NULL,
	"batch_export_id" uuid NOT NULL,
	"instance_id" text DEFAULT '' NOT NULL,
	"timestamp" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"level" varchar(16) NOT NULL,
	"message" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "batch_export_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"batch_export_id" uuid NOT NULL,
	"backfill_id" uuid,
	"status" varchar(64) NOT NULL,
	"records_completed" integer,
	"records_total_count" integer,
	"bytes_exported" bigint,
	"latest_error" text,
	"data_interval_start" timestamp with time zone,
	"data_interval_end" timestamp with time zone NOT NULL,
	"cursor" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	"last_updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_by" text,
	"heartbeat_at" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "batch_exports" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" integer NOT NULL,
	"name" text NOT NULL,
	"model" varchar(64) DEFAULT 'events' NOT NULL,
	"destination_type" varchar(64) NOT NULL,
	"destination_config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"interval" varchar(64) DEFAULT 'hour' NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"deleted" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_paused_at" timestamp with time zone,
	"start_at" timestamp with time zone,
	"end_at" timestamp with time zone,
	"hogql_query" text,
	"schema" jsonb,
	"schedule_from" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "batch_export_backfills" ADD CONSTRAINT "batch_export_backfills_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "batch_export_backfills" ADD CONSTRAINT "batch_export_backfills_batch_export_id_batch_exports_id_fk" FOREIGN KEY ("batch_export_id") REFERENCES "public"."batch_exports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "batch_export_logs" ADD CONSTRAINT "batch_export_logs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "batch_export_logs" ADD CONSTRAINT "batch_export_logs_batch_export_id_batch_exports_id_fk" FOREIGN KEY ("batch_export_id") REFERENCES "public"."batch_exports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "batch_export_runs" ADD CONSTRAINT "batch_export_runs_batch_export_id_batch_exports_id_fk" FOREIGN KEY ("batch_export_id") REFERENCES "public"."batch_exports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "batch_export_runs" ADD CONSTRAINT "batch_export_runs_backfill_id_batch_export_backfills_id_fk" FOREIGN KEY ("backfill_id") REFERENCES "public"."batch_export_backfills"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "batch_exports" ADD CONSTRAINT "batch_exports_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "batch_export_backfills_export_idx" ON "batch_export_backfills" USING btree ("batch_export_id","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "batch_export_logs_export_idx" ON "batch_export_logs" USING btree ("batch_export_id","timestamp" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "batch_export_runs_export_created_idx" ON "batch_export_runs" USING btree ("batch_export_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "batch_export_runs_backfill_idx" ON "batch_export_runs" USING btree ("backfill_id");--> statement-breakpoint
CREATE INDEX "batch_export_runs_status_idx" ON "batch_export_runs" USING btree ("status");--> statement-breakpoint
CREATE UNIQUE INDEX "batch_export_runs_scheduled_unique" ON "batch_export_runs" USING btree ("batch_export_id","data_interval_end") WHERE "batch_export_runs"."backfill_id" is null;--> statement-breakpoint
CREATE INDEX "batch_exports_project_idx" ON "batch_exports" USING btree ("project_id","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "batch_exports_schedulable_idx" ON "batch_exports" USING btree ("schedule_from") WHERE not "batch_exports"."paused" and not "batch_exports"."deleted";--> statement-breakpoint
CREATE INDEX "persons_project_updated_idx" ON "persons" USING btree ("project_id","updated_at","id");