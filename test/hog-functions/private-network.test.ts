import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { makeTenant } from '../helpers/factories.js';
import { captureServer, waitFor } from '../helpers/batch-exports.js';
import { createDeliveryWorker } from '../../src/hog-functions/index.js';

t.test('a private address is refused without ALLOW_PRIVATE_NETWORKS', async (t) => {
  const strict = await buildTestApp(t, { allowPrivateNetworks: [], hogRetryDelaySeconds: 1 });
  const w = createDeliveryWorker(strict.db, strict.app.jobs, strict.app.config);
  await w.start();
  strict.beforeClose(() => w.stop());
  const c = await makeTenant(strict.db);
  const sink = await captureServer(t);
  const id = (
    await strict.call('hog_functions_create', {
      key: c.key,
      params: { project_id: c.project.id },
      body: {
        type: 'destination',
        enabled: true,
        template_id: 'template-webhook',
        inputs: { url: { value: sink.url } },
      },
    })
  ).body.id;
  const res = await strict.inject({
    method: 'POST',
    url: '/batch/',
    payload: { api_key: c.project.api_token, batch: [{ event: 'signed_up', distinct_id: 'x', properties: {} }] },
  });
  t.equal(res.statusCode, 200);
  const logs = await waitFor('the refusal logged', async () => {
    const r = await strict.call('hog_functions_logs_retrieve', {
      key: c.key,
      params: { project_id: c.project.id, id },
      query: { level: 'ERROR' },
    });
    return r.body.results.length > 0 && r.body.results;
  });
  t.match(logs[0]?.message, /Refused/);
  t.equal(sink.requests.length, 0);
});
