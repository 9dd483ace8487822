CREATE TABLE "query_statuses" (
	"project_id" integer NOT NULL,
	"id" varchar(200) NOT NULL,
	"run" uuid DEFAULT gen_random_uuid() NOT NULL,
	"state" varchar(20) DEFAULT 'running' NOT NULL,
	"answer" jsonb,
	"error_message" text,
	"start_time" timestamp with time zone DEFAULT now() NOT NULL,
	"pickup_time" timestamp with time zone,
	"end_time" timestamp with time zone,
	"backend_pid" integer,
	"backend_start" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "query_statuses_project_id_id_pk" PRIMARY KEY("project_id","id")
);
--> statement-breakpoint
ALTER TABLE "query_statuses" ADD CONSTRAINT "query_statuses_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;