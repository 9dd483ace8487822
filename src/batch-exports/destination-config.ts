import { ApiError } from '../core/errors.js';

export const DESTINATION_TYPES = ['S3', 'Postgres', 'HTTP', 'NoOp'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

interface Field {
  required?: boolean;
  secret?: boolean;
  url?: boolean;
}

const COMMON: Record<string, Field> = { include_events: {}, exclude_events: {} };

/** Each destination's fields, after PostHog's *BatchExportInputs. */
const FIELDS: Record<DestinationType, Record<string, Field>> = {
  S3: {
    bucket_name: { required: true },
    region: { required: true },
    prefix: {},
    aws_access_key_id: { secret: true },
    aws_secret_access_key: { secret: true },
    endpoint_url: { url: true },
    file_format: {},
    compression: {},
    use_virtual_style_addressing: {},
    ...COMMON,
  },
  Postgres: {
    host: { required: true },
    port: {},
    database: { required: true },
    user: { required: true, secret: true },
    password: { required: true, secret: true },
    schema: {},
    table_name: {},
    has_self_signed_cert: {},
    ...COMMON,
  },
  HTTP: { url: { required: true, url: true }, token: { required: true, secret: true }, ...COMMON },
  NoOp: { ...COMMON },
};

/**
 * A destination's config as its writer and test steps read it (secrets in clear), after
 * `validateDestinationConfig`: required fields are present, the others may be missing.
 */
export type S3Config = {
  bucket_name: string;
  region: string;
  prefix?: string | null;
  aws_access_key_id?: string | null;
  aws_secret_access_key?: string | null;
  endpoint_url?: string | null;
  file_format?: string | null;
  compression?: string | null;
  use_virtual_style_addressing?: boolean | null;
};

export type PostgresConfig = {
  host: string;
  port?: number | null;
  database: string;
  user: string;
  password: string;
  schema?: string | null;
  table_name?: string | null;
  has_self_signed_cert?: boolean | null;
};

export type HttpConfig = {
  url: string;
  token: string;
};

/** Which compressions each S3 file format allows. Parquet is not written by this server. */
export const S3_COMPRESSIONS: Record<string, string[]> = { JSONLines: ['gzip', 'brotli'] };

const list = (xs: string[]) => `[${xs.map((x) => `'${x}'`).join(', ')}]`;

export function secretFields(type: string): Set<string> {
  const fields = FIELDS[type as DestinationType] ?? {};
  return new Set(Object.keys(fields).filter((k) => fields[k]!.secret));
}

/** The config without its secrets, as every read returns it. */
export function publicConfig(type: string, config: Record<string, unknown>): Record<string, unknown> {
  const secrets = secretFields(type);
  return Object.fromEntries(Object.entries(config).filter(([k]) => !secrets.has(k)));
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * Checks a complete destination config (after a PATCH has been merged in) with PostHog's messages;
 * types of the known fields were already checked against the contract. `attr` names the field.
 */
export function validateDestinationConfig(type: DestinationType, config: Record<string, unknown>): void {
  const fields = FIELDS[type];
  const attr = (f: string) => `destination__config__${f}`;
  const unknown = Object.keys(config)
    .filter((k) => !(k in fields))
    .sort();
  if (unknown.length) {
    throw ApiError.validation(
      'destination__config',
      `Configuration has unknown field/s: ${unknown.map((k) => `'${k}'`).join(', ')}`,
    );
  }
  for (const [name, field] of Object.entries(fields)) {
    const value = config[name];
    if (field.required && (value === undefined || value === null)) {
      throw ApiError.validation(attr(name), `Configuration missing required field: '${name}'`, 'required');
    }
    if (field.required && value === '') throw ApiError.validation(attr(name), 'This field may not be blank.', 'blank');
    if (field.url && value !== undefined && value !== null && value !== '' && !isHttpUrl(value)) {
      throw ApiError.validation(attr(name), 'Enter a valid URL.');
    }
  }
  if (type === 'S3') {
    const format = (config.file_format as string | undefined) ?? 'JSONLines';
    const compressions = S3_COMPRESSIONS[format];
    if (!compressions) {
      throw ApiError.validation(
        attr('file_format'),
        `File format ${format} is not supported. Supported file formats are ${list(Object.keys(S3_COMPRESSIONS))}`,
      );
    }
    const compression = config.compression as string | null | undefined;
    if (compression && !compressions.includes(compression)) {
      throw ApiError.validation(
        attr('compression'),
        `Compression ${compression} is not supported for file format ${format}. Supported compressions are ` +
          `${list(compressions)}`,
      );
    }
    if (typeof config.bucket_name === 'string' && config.bucket_name.length < 3) {
      throw ApiError.validation(attr('bucket_name'), 'Ensure this field has at least 3 characters.', 'min_length');
    }
  }
}
