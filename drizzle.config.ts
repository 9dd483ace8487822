import { defineConfig } from 'drizzle-kit';

// `make migration name=...` only generates SQL from the schema; it never needs a database.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema/index.ts',
  out: './drizzle',
  strict: true,
  verbose: true,
});
