ALTER TABLE "organizations" ADD COLUMN "is_ai_data_processing_approved" boolean;--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "default_experiment_stats_method" varchar(20) DEFAULT 'bayesian';--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "default_anonymize_ips" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "role_at_organization" varchar(64);--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "anonymize_data" boolean DEFAULT false;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "toolbar_mode" varchar(200) DEFAULT 'toolbar';--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "theme_mode" varchar(20);--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "partial_notification_settings" jsonb;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "events_column_config" jsonb DEFAULT '{"active":"DEFAULT"}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "has_seen_product_intro_for" jsonb;--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "allow_sidebar_suggestions" boolean;