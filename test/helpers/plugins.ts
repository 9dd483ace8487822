import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { eq } from 'drizzle-orm';
import { zipSync } from 'fflate';
import tarStream from 'tar-stream';
import type { Test } from 'tap';
import type { Db } from '../../src/db/client.js';
import { organizations } from '../../src/db/schema/index.js';
import type { Family } from '../../src/plugins/queries.js';
import type { OperationId } from '../../src/http/types.js';
import type { TestContext } from './app.js';
import type { Tenant } from './factories.js';

/** A main file per family: what it exports puts the plugin in that family. */
export const SOURCES: Record<Family, string> = {
  pipeline_destinations:
    'export async function onEvent(event: PluginEvent) {\n  await fetch("https://example.com", { body: event.event ' +
    '})\n}\n',
  pipeline_transformations:
    'export function processEvent(event: PluginEvent) {\n  return { ...event, event: event.event.toLowerCase() }\n}\n',
  pipeline_import_apps:
    'export async function runEveryHour({ storage }: Meta) {\n  await storage.set("ran", true)\n}\n',
  pipeline_frontend_apps: 'export type Config = { colour: string }\nconst helper = 1\nexport { helper as inject }\n',
};

/** The capabilities each main file above gives. */
export const CAPABILITIES: Record<Family, Record<string, string[]>> = {
  pipeline_destinations: { methods: ['onEvent'] },
  pipeline_transformations: { methods: ['processEvent'] },
  pipeline_import_apps: { scheduled_tasks: ['runEveryHour'] },
  pipeline_frontend_apps: {},
};

/** A family the plugin of each family is not in, for the family-boundary checks. */
export const OTHER: Record<Family, Family> = {
  pipeline_destinations: 'pipeline_transformations',
  pipeline_transformations: 'pipeline_import_apps',
  pipeline_import_apps: 'pipeline_frontend_apps',
  pipeline_frontend_apps: 'pipeline_destinations',
};

export const SECRET = '**************** POSTHOG SECRET FIELD ****************';

export const CONFIG_SCHEMA = [
  { key: 'host', name: 'Host', type: 'string', required: true },
  { key: 'apiKey', name: 'API key', type: 'string', secret: true },
];

export function op(family: Family, action: string): OperationId {
  return `${family}_${action}` as OperationId;
}

export function pluginJson(name: string, version: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify(
    { name, description: `${name} from an archive`, version, config: CONFIG_SCHEMA, ...extra },
    null,
    2,
  );
}

/** A repository-style zip: everything in one top folder. */
export function zipArchive(files: Record<string, string | Uint8Array>, top = 'plugin-main/'): Buffer {
  const entries = Object.fromEntries(
    Object.entries(files).map(([name, content]) => [
      top + name,
      typeof content === 'string' ? new TextEncoder().encode(content) : content,
    ]),
  );
  return Buffer.from(zipSync(entries));
}

/** An npm-style tarball: everything under `package/`, gzipped. */
export async function tarGzArchive(
  files: Record<string, string | Uint8Array>,
  top = 'package/',
  extra: Partial<tarStream.Header>[] = [],
): Promise<Buffer> {
  const pack = tarStream.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  const done = new Promise<void>((resolve) => pack.on('end', () => resolve()));
  for (const h of extra) pack.entry(h as tarStream.Header, '');
  for (const [name, content] of Object.entries(files)) pack.entry({ name: top + name }, Buffer.from(content));
  pack.finalize();
  await done;
  return gzipSync(Buffer.concat(chunks));
}

/** The files of an archived plugin of `family` at `version`. */
export function archiveFiles(family: Family, name: string, version: string): Record<string, string> {
  const files: Record<string, string> = { 'plugin.json': pluginJson(name, version), 'README.md': `# ${name}\n` };
  if (family === 'pipeline_frontend_apps') files['site.ts'] = 'export function inject() {}\n';
  else files['index.ts'] = SOURCES[family];
  return files;
}

export interface FileServer {
  url(path: string): string;
  set(path: string, body: Buffer | string, status?: number): void;
  /** An address where nothing listens. */
  deadUrl: string;
}

/** A real HTTP server on 127.0.0.1 serving whatever the test puts on it. */
export async function startFileServer(t: Test): Promise<FileServer> {
  const routes = new Map<string, { body: Buffer; status: number }>();
  const listen = (s: Server) =>
    new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)));
  const server = createServer((req, res) => {
    const route = routes.get((req.url ?? '').split('?')[0]!);
    if (!route) {
      res.writeHead(404).end('not found');
      return;
    }
    res.writeHead(route.status, { 'content-length': route.body.length }).end(route.body);
  });
  const port = await listen(server);
  const dead = createServer();
  const deadPort = await listen(dead);
  await new Promise((resolve) => dead.close(resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    set: (path, body, status = 200) => routes.set(path, { body: Buffer.from(body), status }),
    deadUrl: `http://127.0.0.1:${deadPort}/plugin.zip`,
  };
}

export async function setAccessLevel(db: Db, tenant: Tenant, level: 0 | 3 | 6 | 9): Promise<void> {
  await db
    .update(organizations)
    .set({ plugins_access_level: level })
    .where(eq(organizations.id, tenant.organization.id));
}

/** A `source` plugin of `family`, installed through the API by the tenant's owner. */
export async function makePlugin(
  ctx: TestContext,
  tenant: Tenant,
  family: Family,
  body: Record<string, unknown> = {},
): Promise<{ id: number; name: string; [k: string]: unknown }> {
  const res = await ctx.call(op(family, 'create'), {
    key: tenant.key,
    params: { organization_id: tenant.organization.id },
    body: {
      plugin_type: 'source',
      name: `Plugin ${Math.random().toString(36).slice(2, 8)}`,
      capabilities: CAPABILITIES[family],
      ...body,
    },
  });
  if (res.status !== 201) throw new Error(`makePlugin: ${res.status} ${res.raw}`);
  return res.body;
}
