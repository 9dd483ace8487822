CREATE TABLE "share_passwords" (
	"id" serial PRIMARY KEY NOT NULL,
	"sharing_configuration_id" integer NOT NULL,
	"password_hash" varchar(200) NOT NULL,
	"note" varchar(100) DEFAULT '' NOT NULL,
	"created_by_id" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL
);
--> statement-breakpoint
ALTER TABLE "dashboards" ADD COLUMN "last_accessed_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "dashboards" ADD COLUMN "last_refresh" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "dashboards" ADD COLUMN "variables" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "dashboards" ADD COLUMN "breakdown_colors" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "dashboards" ADD COLUMN "data_color_theme_id" integer;--> statement-breakpoint
ALTER TABLE "sharing_configurations" ADD COLUMN "settings" jsonb;--> statement-breakpoint
ALTER TABLE "sharing_configurations" ADD COLUMN "password_required" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "share_passwords" ADD CONSTRAINT "share_passwords_sharing_configuration_id_sharing_configurations_id_fk" FOREIGN KEY ("sharing_configuration_id") REFERENCES "public"."sharing_configurations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "share_passwords" ADD CONSTRAINT "share_passwords_created_by_id_users_id_fk" FOREIGN KEY ("created_by_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "share_passwords_sharing_idx" ON "share_passwords" USING btree ("sharing_configuration_id");