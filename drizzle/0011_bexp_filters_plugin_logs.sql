CREATE TABLE "plugin_log_entries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" integer NOT NULL,
	"plugin_config_id" integer NOT NULL,
	"plugin_id" integer NOT NULL,
	"timestamp" timestamp (6) with time zone DEFAULT now() NOT NULL,
	"source" varchar(16) NOT NULL,
	"type" varchar(16) NOT NULL,
	"message" text NOT NULL,
	"instance_id" uuid NOT NULL
);
--> statement-breakpoint
ALTER TABLE "batch_exports" ADD COLUMN "filters" jsonb;--> statement-breakpoint
ALTER TABLE "plugin_log_entries" ADD CONSTRAINT "plugin_log_entries_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugin_log_entries" ADD CONSTRAINT "plugin_log_entries_plugin_config_id_plugin_configs_id_fk" FOREIGN KEY ("plugin_config_id") REFERENCES "public"."plugin_configs"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "plugin_log_entries_config_idx" ON "plugin_log_entries" USING btree ("project_id","plugin_config_id","timestamp" DESC NULLS LAST);