CREATE TABLE "organization_memberships" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"user_id" integer NOT NULL,
	"level" smallint DEFAULT 1 NOT NULL,
	"joined_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "organization_memberships_org_user_unique" UNIQUE("organization_id","user_id")
);
--> statement-breakpoint
CREATE TABLE "organizations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" varchar(64) NOT NULL,
	"slug" varchar(48) NOT NULL,
	"logo_media_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"plugins_access_level" smallint DEFAULT 9 NOT NULL,
	"is_member_join_email_enabled" boolean DEFAULT true NOT NULL,
	"enforce_2fa" boolean,
	"customer_id" varchar(200),
	"members_can_invite" boolean DEFAULT true NOT NULL,
	"members_can_use_personal_api_keys" boolean DEFAULT true NOT NULL,
	"allow_publicly_shared_resources" boolean DEFAULT true NOT NULL,
	CONSTRAINT "organizations_slug_unique" UNIQUE("slug")
);
--> statement-breakpoint
CREATE TABLE "projects" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"name" varchar(200) NOT NULL,
	"api_token" text NOT NULL,
	"timezone" varchar(240) DEFAULT 'UTC' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_snippet_onboarding" boolean DEFAULT false NOT NULL,
	"has_completed_onboarding_for" jsonb,
	"ingested_event" boolean DEFAULT false NOT NULL,
	"is_demo" boolean DEFAULT false NOT NULL,
	"access_control" boolean DEFAULT false NOT NULL,
	"app_urls" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"anonymize_ips" boolean DEFAULT false NOT NULL,
	"test_account_filters" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"product_description" text,
	CONSTRAINT "projects_uuid_unique" UNIQUE("uuid"),
	CONSTRAINT "projects_api_token_unique" UNIQUE("api_token")
);
--> statement-breakpoint
CREATE TABLE "personal_api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" integer NOT NULL,
	"label" varchar(40) NOT NULL,
	"secure_value" text NOT NULL,
	"mask_value" varchar(11) NOT NULL,
	"scopes" text[] NOT NULL,
	"scoped_teams" integer[],
	"scoped_organizations" text[],
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"last_rolled_at" timestamp with time zone,
	CONSTRAINT "personal_api_keys_secure_value_unique" UNIQUE("secure_value")
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"distinct_id" text NOT NULL,
	"first_name" varchar(150) DEFAULT '' NOT NULL,
	"last_name" varchar(150) DEFAULT '' NOT NULL,
	"email" varchar(254) NOT NULL,
	"is_email_verified" boolean,
	"hedgehog_config" jsonb,
	"is_active" boolean DEFAULT true NOT NULL,
	"is_staff" boolean DEFAULT false NOT NULL,
	"date_joined" timestamp with time zone DEFAULT now() NOT NULL,
	"current_organization_id" uuid,
	"current_team_id" integer,
	CONSTRAINT "users_uuid_unique" UNIQUE("uuid"),
	CONSTRAINT "users_distinct_id_unique" UNIQUE("distinct_id"),
	CONSTRAINT "users_email_unique" UNIQUE("email")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"uuid" uuid NOT NULL,
	"project_id" integer NOT NULL,
	"event" varchar(400) NOT NULL,
	"distinct_id" text NOT NULL,
	"properties" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"timestamp" timestamp (6) with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"elements_chain" text DEFAULT '' NOT NULL,
	"person_id" integer,
	CONSTRAINT "events_project_uuid_unique" UNIQUE("project_id","uuid")
);
--> statement-breakpoint
CREATE TABLE "person_distinct_ids" (
	"project_id" integer NOT NULL,
	"distinct_id" varchar(400) NOT NULL,
	"person_id" integer NOT NULL,
	CONSTRAINT "person_distinct_ids_project_id_distinct_id_pk" PRIMARY KEY("project_id","distinct_id")
);
--> statement-breakpoint
CREATE TABLE "persons" (
	"id" serial PRIMARY KEY NOT NULL,
	"uuid" uuid DEFAULT gen_random_uuid() NOT NULL,
	"project_id" integer NOT NULL,
	"properties" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"is_identified" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "persons_uuid_unique" UNIQUE("uuid")
);
--> statement-breakpoint
ALTER TABLE "organization_memberships" ADD CONSTRAINT "organization_memberships_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "organization_memberships" ADD CONSTRAINT "organization_memberships_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "personal_api_keys" ADD CONSTRAINT "personal_api_keys_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_current_organization_id_organizations_id_fk" FOREIGN KEY ("current_organization_id") REFERENCES "public"."organizations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "users" ADD CONSTRAINT "users_current_team_id_projects_id_fk" FOREIGN KEY ("current_team_id") REFERENCES "public"."projects"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "person_distinct_ids" ADD CONSTRAINT "person_distinct_ids_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "person_distinct_ids" ADD CONSTRAINT "person_distinct_ids_person_id_persons_id_fk" FOREIGN KEY ("person_id") REFERENCES "public"."persons"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "persons" ADD CONSTRAINT "persons_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "organization_memberships_user_idx" ON "organization_memberships" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "projects_organization_idx" ON "projects" USING btree ("organization_id");--> statement-breakpoint
CREATE INDEX "personal_api_keys_user_idx" ON "personal_api_keys" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "events_project_timestamp_idx" ON "events" USING btree ("project_id","timestamp" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_project_event_timestamp_idx" ON "events" USING btree ("project_id","event","timestamp" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_project_distinct_id_idx" ON "events" USING btree ("project_id","distinct_id","timestamp" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_project_person_idx" ON "events" USING btree ("project_id","person_id","timestamp" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "person_distinct_ids_person_idx" ON "person_distinct_ids" USING btree ("person_id");--> statement-breakpoint
CREATE INDEX "persons_project_idx" ON "persons" USING btree ("project_id","id");