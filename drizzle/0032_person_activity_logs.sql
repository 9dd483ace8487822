CREATE TABLE "person_activity_logs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"project_id" integer NOT NULL,
	"person_id" integer NOT NULL,
	"user_id" integer,
	"activity" varchar(79) NOT NULL,
	"detail" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "person_activity_logs" ADD CONSTRAINT "person_activity_logs_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "person_activity_logs" ADD CONSTRAINT "person_activity_logs_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "person_activity_logs_project_created_idx" ON "person_activity_logs" USING btree ("project_id","created_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "person_activity_logs_person_created_idx" ON "person_activity_logs" USING btree ("project_id","person_id","created_at" DESC NULLS LAST);