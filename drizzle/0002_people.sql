CREATE TABLE "organization_domains" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"domain" varchar(128) NOT NULL,
	"verification_challenge" varchar(128) NOT NULL,
	"verified_at" timestamp with time zone,
	"last_verification_retry" timestamp with time zone,
	"jit_provisioning_enabled" boolean DEFAULT false NOT NULL,
	"sso_enforcement" varchar(28) DEFAULT '' NOT NULL,
	"saml_entity_id" varchar(512),
	"saml_acs_url" varchar(512),
	"saml_x509_cert" text,
	CONSTRAINT "organization_domains_domain_unique" UNIQUE("domain")
);
--> statement-breakpoint
CREATE TABLE "organization_invites" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"target_email" varchar(254) NOT NULL,
	"first_name" varchar(30) DEFAULT '' NOT NULL,
	"level" smallint DEFAULT 1 NOT NULL,
	"message" text,
	"private_project_access" jsonb DEFAULT '[]'::jsonb,
	"created_by_id" integer,
	"emailing_attempt_made" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "organization_domains" ADD CONSTRAINT "organization_domains_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "organization_invites" ADD CONSTRAINT "organization_invites_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "organization_invites" ADD CONSTRAINT "organization_invites_created_by_id_users_id_fk" FOREIGN KEY ("created_by_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "organization_domains_org_idx" ON "organization_domains" USING btree ("organization_id");--> statement-breakpoint
CREATE INDEX "organization_invites_org_created_idx" ON "organization_invites" USING btree ("organization_id","created_at");--> statement-breakpoint
CREATE INDEX "organization_invites_org_email_idx" ON "organization_invites" USING btree ("organization_id","target_email");