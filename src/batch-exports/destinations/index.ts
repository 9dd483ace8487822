import { httpWriter } from './http.js';
import { noopWriter } from './noop.js';
import { postgresWriter } from './postgres.js';
import { s3Writer } from './s3.js';
import type { SecretBox } from '../../secrets/index.js';
import { openDestinationSecrets } from '../destination-secrets.js';
import type { DestinationContext, DestinationWriter } from './types.js';

export { NonRetryableError, type DestinationWriter } from './types.js';

/** Secrets are decrypted here, for the writer alone: the row read from the database keeps them sealed. */
export async function openDestination(sealed: DestinationContext, secrets: SecretBox): Promise<DestinationWriter> {
  const { exp } = sealed;
  const ctx = {
    ...sealed,
    exp: { ...exp, destination_config: openDestinationSecrets(secrets, exp.destination_type, exp.destination_config) },
  };
  switch (ctx.exp.destination_type) {
    case 'S3':
      return s3Writer(ctx);
    case 'Postgres':
      return postgresWriter(ctx);
    case 'HTTP':
      return httpWriter(ctx);
    case 'NoOp':
      return noopWriter();
    default:
      throw new Error(`Unsupported destination ${ctx.exp.destination_type}`);
  }
}
