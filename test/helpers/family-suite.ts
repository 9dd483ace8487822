import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { Family } from '../../src/plugins/queries.js';
import { buildTestApp } from './app.js';
import { familyActionsSuite } from './family-actions-suite.js';
import { familyCollectionSuite } from './family-collection-suite.js';
import { familyCrudSuite } from './family-crud-suite.js';
import { startFileServer } from './plugins.js';

/**
 * All thirteen operations of one plugin family against the production app, with a real HTTP server
 * serving the archives and the catalogue, and a real folder for local plugins.
 */
export async function runFamilySuite(t: Test, family: Family): Promise<void> {
  const server = await startFileServer(t);
  const localDir = mkdtempSync(join(tmpdir(), 'plugins-'));
  t.teardown(() => rmSync(localDir, { recursive: true, force: true }));
  const ctx = await buildTestApp(t, {
    pluginArchiveMaxBytes: 64 * 1024,
    pluginRepositoryUrl: server.url('/repository.json'),
    pluginLocalDir: localDir,
  });
  await familyCrudSuite(t, ctx, family, server, localDir);
  await familyActionsSuite(t, ctx, family, server);
  await familyCollectionSuite(t, ctx, family, server);
}
