import { eq } from 'drizzle-orm';
import type { Db } from '../db/client.js';
import { projects } from '../db/schema/index.js';

export interface RemoteConfigProject {
  api_token: string;
  autocapture_opt_out: boolean | null;
  heatmaps_opt_in: boolean | null;
}

/** Longer than any project token; a NUL byte cannot be in PostgreSQL text at all. */
const plausible = (token: string) => token.length <= 200 && !token.includes('\u0000');

/** The settings posthog-js's remote config carries, of the project whose token this is. */
export async function remoteConfigProject(db: Db, token: string): Promise<RemoteConfigProject | undefined> {
  if (!plausible(token)) return undefined;
  const [row] = await db
    .select({
      api_token: projects.api_token,
      autocapture_opt_out: projects.autocapture_opt_out,
      heatmaps_opt_in: projects.heatmaps_opt_in,
    })
    .from(projects)
    .where(eq(projects.api_token, token))
    .limit(1);
  return row;
}
