CREATE TABLE "hog_function_logs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"project_id" integer NOT NULL,
	"hog_function_id" uuid NOT NULL,
	"instance_id" text NOT NULL,
	"level" varchar(16) NOT NULL,
	"message" text NOT NULL,
	"timestamp" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "hog_function_masks" (
	"hog_function_id" uuid NOT NULL,
	"hash" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "hog_function_masks_hog_function_id_hash_pk" PRIMARY KEY("hog_function_id","hash")
);
--> statement-breakpoint
CREATE TABLE "hog_function_metrics" (
	"hog_function_id" uuid NOT NULL,
	"bucket" timestamp with time zone NOT NULL,
	"metric_kind" varchar(16) NOT NULL,
	"metric_name" varchar(32) NOT NULL,
	"count" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "hog_function_metrics_hog_function_id_bucket_metric_name_pk" PRIMARY KEY("hog_function_id","bucket","metric_name")
);
--> statement-breakpoint
CREATE TABLE "hog_function_replays" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" integer NOT NULL,
	"hog_function_id" uuid NOT NULL,
	"date_from" timestamp with time zone NOT NULL,
	"date_to" timestamp with time zone NOT NULL,
	"status" varchar(16) DEFAULT 'running' NOT NULL,
	"total" integer DEFAULT 0 NOT NULL,
	"enqueued" integer DEFAULT 0 NOT NULL,
	"delivered" integer DEFAULT 0 NOT NULL,
	"failed" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "hog_functions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" integer NOT NULL,
	"type" varchar(24) NOT NULL,
	"name" varchar(400),
	"description" text DEFAULT '' NOT NULL,
	"enabled" boolean DEFAULT false NOT NULL,
	"deleted" boolean DEFAULT false NOT NULL,
	"hog" text NOT NULL,
	"bytecode" jsonb,
	"inputs_schema" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"inputs" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"encrypted_inputs" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"filters" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"masking" jsonb,
	"mappings" jsonb,
	"icon_url" text,
	"template_id" varchar(400),
	"execution_order" smallint,
	"created_by" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "hog_function_logs" ADD CONSTRAINT "hog_function_logs_hog_function_id_hog_functions_id_fk" FOREIGN KEY ("hog_function_id") REFERENCES "public"."hog_functions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "hog_function_masks" ADD CONSTRAINT "hog_function_masks_hog_function_id_hog_functions_id_fk" FOREIGN KEY ("hog_function_id") REFERENCES "public"."hog_functions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "hog_function_metrics" ADD CONSTRAINT "hog_function_metrics_hog_function_id_hog_functions_id_fk" FOREIGN KEY ("hog_function_id") REFERENCES "public"."hog_functions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "hog_function_replays" ADD CONSTRAINT "hog_function_replays_hog_function_id_hog_functions_id_fk" FOREIGN KEY ("hog_function_id") REFERENCES "public"."hog_functions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "hog_functions" ADD CONSTRAINT "hog_functions_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "hog_functions" ADD CONSTRAINT "hog_functions_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "hog_function_logs_fn_idx" ON "hog_function_logs" USING btree ("hog_function_id","timestamp" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "hog_function_logs_ts_idx" ON "hog_function_logs" USING btree ("timestamp");--> statement-breakpoint
CREATE INDEX "hog_functions_project_idx" ON "hog_functions" USING btree ("project_id","type") WHERE not "hog_functions"."deleted";--> statement-breakpoint
CREATE INDEX "hog_functions_enabled_idx" ON "hog_functions" USING btree ("project_id") WHERE "hog_functions"."enabled" and not "hog_functions"."deleted";