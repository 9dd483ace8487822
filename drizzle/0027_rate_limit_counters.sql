-- UNLOGGED: counters need no WAL; a crash that empties the table only restarts the windows.
CREATE UNLOGGED TABLE "rate_limit_counters" (
	"scope" text NOT NULL,
	"key" text NOT NULL,
	"burst_start" bigint NOT NULL,
	"burst_count" integer NOT NULL,
	"sustained_start" bigint NOT NULL,
	"sustained_count" integer NOT NULL,
	"last_ms" bigint NOT NULL,
	"allowed" boolean NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "rate_limit_counters_scope_key_pk" PRIMARY KEY("scope","key")
);
