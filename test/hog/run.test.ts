// Running Hog on PostHog's VM: PostHog's limits stop runaway programs with a clear error and without holding
// the event loop, async functions (fetch) suspend and resume the VM, print becomes upper-case log lines.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { compileHog, HOG_LIMITS, runHog } from '../../src/hog/index.js';

async function compiled(source: string) {
  return (await compileHog(source, { supportedFunctions: ['fetch'] })).bytecode;
}

/** The longest gap between ticks of a 5 ms timer while `work` runs: how long the event loop was held. */
async function maxLoopLag<T>(work: () => Promise<T>): Promise<{ value: T; lag: number }> {
  let last = performance.now();
  let lag = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    lag = Math.max(lag, now - last);
    last = now;
  }, 5);
  const value = await work();
  await new Promise((r) => setTimeout(r, 20));
  clearInterval(timer);
  return { value, lag };
}

t.test('an infinite loop is stopped at the time limit, holding the event loop no longer', async (t) => {
  const bytecode = await compiled('while (true) {}');
  const { value: res, lag } = await maxLoopLag(() => runHog(bytecode));
  t.equal(res.ok, false);
  t.match(res.error, /Execution timed out after 0.1 seconds/);
  t.ok(res.ops > 1000, `it ran (${res.ops} ops) before being stopped`);
  t.ok(res.durationMs >= HOG_LIMITS.timeoutMs && res.durationMs < HOG_LIMITS.timeoutMs + 400, `${res.durationMs} ms`);
  t.ok(lag < HOG_LIMITS.timeoutMs + 400, `event loop held ${lag.toFixed(0)} ms at most`);
  t.comment(`while(true): stopped after ${res.durationMs.toFixed(0)} ms, loop lag ${lag.toFixed(0)} ms`);

  const recursion = await runHog(await compiled('fn f(n) { return f(n + 1) } return f(1)'));
  t.equal(recursion.ok, false, 'unbounded recursion is stopped too');
  t.match(recursion.error, /timed out|call stack|Maximum/i);
});

t.test('a memory bomb is stopped by the memory limit', async (t) => {
  const bomb = await compiled("let s := 'xxxxxxxxxxxxxxxx'; while (true) { s := concat(s, s) }");
  // A generous time limit shows the memory limit is what stops it.
  const res = await runHog(bomb, { timeoutMs: 10_000 });
  t.equal(res.ok, false);
  t.match(res.error, /Memory limit of 67108864 bytes exceeded/);
  t.ok(res.memUsed > HOG_LIMITS.memoryLimit, `stopped at ${res.memUsed} bytes`);
  t.comment(`string doubling: stopped at ${res.memUsed} bytes after ${res.durationMs.toFixed(0)} ms`);

  const grow =
    "let c := 'y'; for (let i := 0; i < 10; i := i + 1) { c := c || c } " +
    'let a := []; while (true) { a := arrayPushBack(a, c) }';
  const small = await runHog(await compiled(grow), {
    memoryLimit: 1_000_000,
    timeoutMs: 10_000,
  });
  t.match(small.error, /Memory limit of 1000000 bytes exceeded/, 'a growing array hits a lower limit');

  const defaults = await maxLoopLag(() => runHog(bomb));
  t.equal(defaults.value.ok, false, 'with the default limits it is stopped as well');
  t.ok(defaults.lag < HOG_LIMITS.timeoutMs + 400, `event loop held ${defaults.lag.toFixed(0)} ms at most`);
});

t.test('fetch is the caller’s async function: the VM suspends, awaits it and resumes', async (t) => {
  const received: { method?: string; body: string }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      received.push({ method: req.method, body });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ ok: true, n: received.length }));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  // The caller's implementation: here a plain fetch answering PostHog's {status, body} shape.
  const fetchHook = async (target: unknown, options: unknown) => {
    const o = (options ?? {}) as { method?: string; body?: unknown };
    const res = await fetch(String(target), { method: o.method ?? 'GET', body: JSON.stringify(o.body) });
    return { status: res.status, body: await res.json() };
  };
  const program = await compiled(`
    let r1 := fetch(inputs.url, {'method': 'POST', 'body': {'event': event.event}})
    let r2 := fetch(inputs.url, {'method': 'POST', 'body': {'previous': r1.body.n}})
    print(f'status {r2.status}')
    return [r1.status, r2.body.n]`);
  const res = await runHog(program, {
    globals: { inputs: { url }, event: { event: 'signup' } },
    asyncFunctions: { fetch: fetchHook },
  });
  t.same(res.result, [200, 2]);
  t.equal(res.asyncSteps, 2);
  t.same(
    received.map((r) => [r.method, JSON.parse(r.body)]),
    [
      ['POST', { event: 'signup' }],
      ['POST', { previous: 1 }],
    ],
  );
  t.same(
    res.logs.map((l) => [l.level, l.message]),
    [['INFO', 'status 200']],
  );

  const six = await compiled('for (let i := 0; i < 6; i := i + 1) { fetch(inputs.url) } return 1');
  const tooMany = await runHog(six, { globals: { inputs: { url } }, asyncFunctions: { fetch: fetchHook } });
  t.equal(tooMany.ok, false);
  t.match(tooMany.error, /Exceeded maximum number of async steps: 5/);

  const failing = await runHog(await compiled("return fetch('http://x')"), {
    asyncFunctions: { fetch: async () => Promise.reject(new Error('refused by the network policy')) },
  });
  t.same([failing.ok, failing.error], [false, 'refused by the network policy'], 'a failed fetch stops the run');
  const missing = await runHog(await compiled("return fetch('http://x')"));
  t.match(missing.error, /fetch/, 'without a fetch implementation the call is refused');
  const sleep = await runHog(await compiled('sleep(1); return 1'));
  t.equal(sleep.ok, false, "the VM's own async functions are not offered");
});

t.test('errors: uncaught throws and library failures end the run with a message', async (t) => {
  const thrown = await runHog(await compiled("throw Error('nope')"));
  t.equal(thrown.ok, false);
  t.match(thrown.error, /nope/);
  const typed = await runHog(await compiled("throw HogError('RetryError', 'later', {'after': 5})"));
  t.match(typed.error, /later/);
  const parse = await runHog(await compiled("return jsonParse('{broken')"));
  t.equal(parse.ok, false);
  t.match(parse.error, /JSON/);
});

t.test('print: upper-case levels, at most 25 lines, secrets redacted, long lines cut', async (t) => {
  const res = await runHog(await compiled("for (let i := 1; i <= 30; i := i + 1) { print('line', i) } print('never')"));
  t.equal(res.logs.length, HOG_LIMITS.maxLogs + 1);
  t.same(res.logs[0], { level: 'INFO', message: 'line, 1', timestamp: res.logs[0]!.timestamp });
  t.match(res.logs[0]!.timestamp, /^\d{4}-\d\d-\d\dT/);
  t.same(res.logs[HOG_LIMITS.maxLogs], {
    level: 'WARN',
    message: 'Function exceeded maximum log entries. No more logs will be collected.',
    timestamp: res.logs[HOG_LIMITS.maxLogs]!.timestamp,
  });
  const secret = await runHog(await compiled("print(f'token={inputs.token}', inputs)"), {
    globals: { inputs: { token: 's3cr3t-value' } },
    sensitiveValues: ['s3cr3t-value'],
  });
  t.same(
    secret.logs.map((l) => l.message),
    ['token=***REDACTED***, {"token":"***REDACTED***"}'],
  );
  const long = await runHog(await compiled('print(long)'), { globals: { long: 'z'.repeat(20_000) } });
  t.equal(long.logs[0]!.message, `${'z'.repeat(HOG_LIMITS.maxLogLength)}... (truncated)`);
});

t.test('results come back as plain JS values', async (t) => {
  const res = await runHog(await compiled("return {'a': [1, (2, 3)], 'b': {'c': null}, 'd': toDate('2024-01-31')}"));
  t.equal(res.ok, true);
  t.same((res.result as { a: unknown }).a, [1, [2, 3]]);
  t.same((res.result as { b: unknown }).b, { c: null });
  const hashed = await runHog(await compiled("return [sha256Hex('abc'), md5Hex('abc'), match('Hello', '(?i)^h')]"));
  t.same(hashed.result, [
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    '900150983cd24fb0d6963f7d28e17f72',
    true,
  ]);
});
