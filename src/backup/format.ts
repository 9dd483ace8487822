/** What a backup file says of itself in its first line. */
export const FORMAT = 'posthog-api-backup';
export const VERSION = 1;

export interface BackupHeader {
  format: typeof FORMAT;
  version: number;
  /** Migrations applied to the database the backup was taken from. */
  migrations: number;
  server_version: string;
  created_at: string;
}
