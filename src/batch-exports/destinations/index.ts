import { httpWriter } from './http.js';
import { noopWriter } from './noop.js';
import { postgresWriter } from './postgres.js';
import { s3Writer } from './s3.js';
import type { DestinationContext, DestinationWriter } from './types.js';

export { NonRetryableError, type DestinationWriter } from './types.js';

export async function openDestination(ctx: DestinationContext): Promise<DestinationWriter> {
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
