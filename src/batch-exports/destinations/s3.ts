import { once } from 'node:events';
import { PassThrough, type Transform } from 'node:stream';
import { constants as zlib, createBrotliCompress, createGzip } from 'node:zlib';
import { createRequire } from 'node:module';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Upload } from '@aws-sdk/lib-storage';
import { ConnectionFailedError, guardedAgents, isConnectionFailure, NetworkPolicyError } from '../../net/index.js';
import type { S3Config } from '../destination-config.js';
import { jsonLines } from '../records.js';
import { NonRetryableError, type DestinationContext, type DestinationWriter } from './types.js';

/**
 * Compression levels for streaming: gzip's default (6) and brotli's (11) made compressing the
 * longest part of a large export; these cost a third (gzip) and a small fraction (brotli) of
 * the time for objects a few percent larger.
 */
const GZIP_LEVEL = 3;
const BROTLI_QUALITY = 5;

const EXTENSIONS: Record<string, string> = { gzip: '.gz', brotli: '.br' };
const FATAL_CODES = new Set([
  'AccessDenied',
  'NoSuchBucket',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidBucketName',
]);

/** `<prefix>/<data_interval_start>-<data_interval_end>.jsonl[.gz|.br]`, as PostHog names its objects. */
export function s3Key(prefix: string, start: Date | null, end: Date, compression: string | null): string {
  const extension = compression ? EXTENSIONS[compression] : '';
  const base = `${start ? start.toISOString() : 'START'}-${end.toISOString()}.jsonl${extension}`;
  const clean = prefix.replace(/^\/+|\/+$/g, '');
  return clean ? `${clean}/${base}` : base;
}

// The AWS SDK holds about 15 MB once loaded and only S3 exports and their destination test use it:
// it is loaded on first use rather than when the server boots.
const load = createRequire(import.meta.url);
export const awsS3 = (): typeof import('@aws-sdk/client-s3') => load('@aws-sdk/client-s3');
const awsStorage = (): typeof import('@aws-sdk/lib-storage') => load('@aws-sdk/lib-storage');

/** A client for the destination's S3 (or S3-compatible server), connecting only where the policy allows. */
export function s3Client(config: S3Config, network: DestinationContext['network']): S3Client {
  // The agents are the client's own; `client.destroy()` closes their sockets.
  const agents = guardedAgents(network.policy, { keepAlive: true });
  const { S3Client } = awsS3();
  return new S3Client({
    region: config.region,
    requestHandler: { httpAgent: agents.http, httpsAgent: agents.https },
    ...(config.endpoint_url
      ? { endpoint: config.endpoint_url, forcePathStyle: !config.use_virtual_style_addressing }
      : {}),
    // Without keys of its own the destination gets unsigned requests (a bucket open to writes), never
    // the SDK's default credentials: those are the operator's (environment, instance role), and a
    // tenant must not write with them.
    ...(config.aws_access_key_id
      ? { credentials: { accessKeyId: config.aws_access_key_id, secretAccessKey: config.aws_secret_access_key ?? '' } }
      : { credentials: { accessKeyId: '', secretAccessKey: '' }, signer: { sign: async <R>(request: R) => request } }),
  });
}

/**
 * Streams JSON lines through the compressor into a multipart upload: memory holds a few 5 MiB parts,
 * whatever the run's size. The object appears only when the upload completes, and a retried run
 * writes the same key again, so a retry never leaves a duplicate.
 */
export function s3Writer({ exp, run, network }: DestinationContext): DestinationWriter {
  const config = exp.destination_config as S3Config;
  const compression: string | null = config.compression ?? null;
  const client = s3Client(config, network);
  let bytes = 0;
  let input: Transform | undefined;
  let upload: Upload | undefined;
  let done: Promise<unknown> | undefined;
  let failure: unknown;

  function start(): Transform {
    const body = new PassThrough();
    input =
      compression === 'gzip'
        ? createGzip({ level: GZIP_LEVEL })
        : compression === 'brotli'
          ? createBrotliCompress({ params: { [zlib.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } })
          : new PassThrough();
    input.on('data', (chunk: Buffer) => (bytes += chunk.length));
    // A failed upload ends the body with its error (below), also when no write is waiting to hear it:
    // unheard, the error would end the process. The failure itself is kept in `failure`.
    input.on('error', () => {});
    input.pipe(body);
    const { Upload } = awsStorage();
    upload = new Upload({
      client,
      params: {
        Bucket: config.bucket_name,
        Key: s3Key(config.prefix ?? '', run.data_interval_start, run.data_interval_end, compression),
        Body: body,
        ContentType: 'application/jsonl',
        ...(compression === 'gzip'
          ? { ContentEncoding: 'gzip' }
          : compression === 'brotli'
            ? { ContentEncoding: 'br' }
            : {}),
      },
      partSize: 5 * 1024 * 1024,
      queueSize: 2,
    });
    done = upload.done().catch((err) => {
      failure = err;
      // Nothing reads the body any more: a write waiting for it to drain is woken by the error.
      input?.destroy(err);
      throw err;
    });
    done.catch(() => {});
    return input;
  }

  function classify(err: unknown): unknown {
    if (err instanceof NetworkPolicyError) return new NonRetryableError(err.message);
    if (isConnectionFailure(err)) return new ConnectionFailedError('the S3 endpoint');
    const name = (err as { name?: string; Code?: string })?.name ?? (err as { Code?: string })?.Code;
    if (name && FATAL_CODES.has(name)) return new NonRetryableError(`S3 refused the upload: ${name}`);
    return err;
  }

  return {
    get bytes() {
      return bytes;
    },
    async write(batch) {
      if (failure) throw classify(failure);
      const stream = input ?? start();
      if (!stream.write(jsonLines(batch))) {
        // Not raced against the upload's promise: that lives as long as the run, and each race would
        // leave a reaction on it until the run ends.
        await once(stream, 'drain').catch(() => {});
      }
      if (failure) throw classify(failure);
    },
    async finish() {
      if (!input) return;
      input.end();
      try {
        await done;
      } catch (err) {
        throw classify(err);
      } finally {
        client.destroy();
      }
    },
    async abort() {
      try {
        await upload?.abort();
      } catch {
        // Nothing was completed; an unfinished multipart upload is cleaned up by the bucket's lifecycle.
      }
      input?.destroy();
      client.destroy();
    },
  };
}
