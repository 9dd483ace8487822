ALTER TABLE "sharing_configurations" ALTER COLUMN "dashboard_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "sharing_configurations" ADD COLUMN "insight_id" integer;--> statement-breakpoint
ALTER TABLE "sharing_configurations" ADD CONSTRAINT "sharing_configurations_insight_id_insights_id_fk" FOREIGN KEY ("insight_id") REFERENCES "public"."insights"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sharing_configurations" ADD CONSTRAINT "sharing_configurations_insight_id_unique" UNIQUE("insight_id");--> statement-breakpoint
ALTER TABLE "sharing_configurations" ADD CONSTRAINT "sharing_configurations_one_target" CHECK (num_nonnulls("sharing_configurations"."dashboard_id", "sharing_configurations"."insight_id") = 1);