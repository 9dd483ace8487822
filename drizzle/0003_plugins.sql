CREATE TABLE "plugin_activity_logs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"project_id" integer,
	"user_id" integer,
	"activity" varchar(79) NOT NULL,
	"scope" varchar(79) NOT NULL,
	"item_id" varchar(72) NOT NULL,
	"detail" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "plugin_configs" (
	"id" serial PRIMARY KEY NOT NULL,
	"project_id" integer NOT NULL,
	"plugin_id" integer NOT NULL,
	"enabled" boolean DEFAULT false NOT NULL,
	"order" integer NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"name" varchar(400),
	"description" varchar(1000),
	"deleted" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "plugin_source_files" (
	"id" serial PRIMARY KEY NOT NULL,
	"plugin_id" integer NOT NULL,
	"filename" varchar(200) NOT NULL,
	"source" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "plugin_source_files_plugin_filename_unique" UNIQUE("plugin_id","filename")
);
--> statement-breakpoint
CREATE TABLE "plugins" (
	"id" serial PRIMARY KEY NOT NULL,
	"organization_id" uuid,
	"plugin_type" varchar(200),
	"is_global" boolean DEFAULT false NOT NULL,
	"name" varchar(200),
	"description" text,
	"url" varchar(800),
	"icon" varchar(800),
	"config_schema" jsonb DEFAULT '[]'::jsonb,
	"tag" varchar(200),
	"latest_tag" varchar(800),
	"latest_tag_checked_at" timestamp with time zone,
	"capabilities" jsonb DEFAULT '{}'::jsonb,
	"metrics" jsonb DEFAULT '{}'::jsonb,
	"public_jobs" jsonb DEFAULT '{}'::jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "plugins_organization_url_unique" UNIQUE("organization_id","url")
);
--> statement-breakpoint
ALTER TABLE "plugin_activity_logs" ADD CONSTRAINT "plugin_activity_logs_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugin_activity_logs" ADD CONSTRAINT "plugin_activity_logs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugin_activity_logs" ADD CONSTRAINT "plugin_activity_logs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugin_configs" ADD CONSTRAINT "plugin_configs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugin_configs" ADD CONSTRAINT "plugin_configs_plugin_id_plugins_id_fk" FOREIGN KEY ("plugin_id") REFERENCES "public"."plugins"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugin_source_files" ADD CONSTRAINT "plugin_source_files_plugin_id_plugins_id_fk" FOREIGN KEY ("plugin_id") REFERENCES "public"."plugins"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "plugins" ADD CONSTRAINT "plugins_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "plugin_activity_logs_org_created_idx" ON "plugin_activity_logs" USING btree ("organization_id","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "plugin_configs_project_order_idx" ON "plugin_configs" USING btree ("project_id","order","plugin_id");--> statement-breakpoint
CREATE INDEX "plugin_configs_plugin_idx" ON "plugin_configs" USING btree ("plugin_id","enabled");--> statement-breakpoint
CREATE INDEX "plugins_is_global_idx" ON "plugins" USING btree ("is_global");