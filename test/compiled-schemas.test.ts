// Each distinct schema is compiled once (src/http/openapi.ts): the routes' own copies of the shared
// error responses, and the environments twins of the project routes, reuse one function.
import t from 'tap';
import { compileAllSchemas, compiledSchemaCounts } from '../src/http/openapi.js';
import { spec } from '../src/http/spec.js';
import { buildTestApp } from './helpers/app.js';

t.test('validators and serializers are one per distinct schema, not one per route, each compiling', async (t) => {
  const { app, call } = await buildTestApp(t);
  await app.ready();
  let responses = 0;
  let operations = 0;
  for (const item of Object.values(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      operations++;
      responses += Object.keys((op.responses ?? {}) as object).length;
    }
  }
  const counts = compiledSchemaCounts(app);
  t.ok(counts, 'the app counts its compiled schemas');
  t.ok(counts!.serializers > 0 && counts!.validators > 0);
  t.ok(counts!.serializers * 4 < responses, `${counts!.serializers} serializers for ${responses} responses`);
  t.ok(counts!.validators < operations, `${counts!.validators} validators for ${operations} operations`);
  t.equal((await call('health_retrieve')).status, 200, 'and the app answers through them');
  // They compile when first called; each of the contract's must compile.
  t.doesNotThrow(() => compileAllSchemas(app), 'every schema of the contract compiles');
});
