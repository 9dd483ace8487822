ALTER TABLE "organizations" ALTER COLUMN "members_can_invite" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "batch_exports" ALTER COLUMN "model" DROP NOT NULL;