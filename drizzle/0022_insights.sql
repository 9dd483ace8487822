CREATE TABLE "insights" (
	"id" serial PRIMARY KEY NOT NULL,
	"project_id" integer NOT NULL,
	"short_id" varchar(12) NOT NULL,
	"name" varchar(400),
	"derived_name" varchar(400),
	"description" varchar(400),
	"query" jsonb,
	"filters" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"order" integer,
	"deleted" boolean DEFAULT false NOT NULL,
	"saved" boolean DEFAULT false NOT NULL,
	"favorited" boolean DEFAULT false NOT NULL,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_by_id" integer,
	"last_modified_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_modified_by_id" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "insights_project_short_id_unique" UNIQUE("project_id","short_id")
);
--> statement-breakpoint
CREATE TABLE "query_cache" (
	"project_id" integer NOT NULL,
	"cache_key" varchar(80) NOT NULL,
	"answer" jsonb NOT NULL,
	"last_refresh" timestamp with time zone NOT NULL,
	"bytes" integer NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"hits" integer DEFAULT 0 NOT NULL,
	CONSTRAINT "query_cache_project_id_cache_key_pk" PRIMARY KEY("project_id","cache_key")
);
--> statement-breakpoint
ALTER TABLE "dashboard_tiles" ADD COLUMN "insight_id" integer;--> statement-breakpoint
ALTER TABLE "insights" ADD CONSTRAINT "insights_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "insights" ADD CONSTRAINT "insights_created_by_id_users_id_fk" FOREIGN KEY ("created_by_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "insights" ADD CONSTRAINT "insights_last_modified_by_id_users_id_fk" FOREIGN KEY ("last_modified_by_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "query_cache" ADD CONSTRAINT "query_cache_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "insights_project_idx" ON "insights" USING btree ("project_id","deleted");--> statement-breakpoint
CREATE INDEX "query_cache_expiry_idx" ON "query_cache" USING btree ("expires_at");--> statement-breakpoint
ALTER TABLE "dashboard_tiles" ADD CONSTRAINT "dashboard_tiles_insight_id_insights_id_fk" FOREIGN KEY ("insight_id") REFERENCES "public"."insights"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "dashboard_tiles_insight_idx" ON "dashboard_tiles" USING btree ("insight_id");