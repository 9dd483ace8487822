// Shared by batch_exports*.test.ts: one app, an S3 destination body and the secret box to read stored credentials.
import t from 'tap';
import { buildTestApp } from './app.js';
import { secretBox } from '../../src/secrets/index.js';

export const ctx = await buildTestApp(t);
export const { call, db } = ctx;
export const box = secretBox(ctx.app.config);

export const S3 = {
  type: 'S3',
  config: {
    bucket_name: 'my-bucket',
    region: 'us-east-1',
    prefix: 'events/',
    aws_access_key_id: 'AKIDSECRET',
    aws_secret_access_key: 'very-secret',
    compression: 'gzip',
  },
};
export const body = (extra: Record<string, unknown> = {}) => ({
  name: 'To S3',
  destination: S3,
  interval: 'hour',
  ...extra,
});
