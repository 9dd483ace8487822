// One /batch/ request just under the 20 MiB capture limit, and how long `GET /_health` takes to
// answer while it is being ingested (the event loop must not be held by one request).

/** A /batch/ body of about `bytes`, events of ~1 kB each. */
function bigBody(token: string, bytes: number): string {
  const now = new Date().toISOString();
  const pad = 'x'.repeat(800);
  const one = (i: number) => ({
    event: '$pageview',
    distinct_id: `big-${i % 1000}`,
    timestamp: now,
    properties: { i, pad },
  });
  const size = JSON.stringify(one(999_999)).length + 1;
  const batch = Array.from({ length: Math.floor((bytes - 200) / size) }, (_, i) => one(i));
  return JSON.stringify({ api_key: token, batch, sent_at: now });
}

/** The nearest-rank percentile of a list of latencies. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
}

export async function bigBatchHealth(
  base: string,
  token: string,
): Promise<{
  mb: number;
  events: number;
  ingestMs: number;
  status: number;
  healthMaxMs: number;
  healthP99Ms: number;
  healthChecks: number;
}> {
  const text = bigBody(token, 20 * 1024 * 1024 - 64 * 1024);
  const events = (JSON.parse(text) as { batch: unknown[] }).batch.length;
  // Encoded up front: encoding 20 MiB as fetch starts would hold this process's own loop, and the
  // probe below would time this process rather than the server.
  const body = Buffer.from(text);
  const latencies: number[] = [];
  let done = false;
  const started = Date.now();
  const ingest = fetch(`${base}/batch/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });
  const probe = (async () => {
    while (!done) {
      const t0 = performance.now();
      await fetch(`${base}/_health`).then((r) => r.arrayBuffer());
      latencies.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const status = await ingest;
  const ingestMs = Date.now() - started;
  done = true;
  await probe;
  return {
    mb: Math.round((body.length / 1024 / 1024) * 10) / 10,
    events,
    ingestMs,
    status,
    healthMaxMs: Math.round(Math.max(...latencies)),
    healthP99Ms: Math.round(percentile(latencies, 0.99)),
    healthChecks: latencies.length,
  };
}
