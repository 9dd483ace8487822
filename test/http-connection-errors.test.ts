// Answers decided before or below Fastify's routing (Node's HTTP parser, a body refused before it has
// arrived), checked over real sockets against a listening app.
import { request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import t from 'tap';
import { API_BODY_LIMIT } from '../src/app.js';
import { buildTestApp } from './helpers/app.js';
import { makeTenant } from './helpers/factories.js';

const ctx = await buildTestApp(t);
await ctx.app.listen({ host: '127.0.0.1', port: 0 });
const port = (ctx.app.server.address() as AddressInfo).port;
const tenant = await makeTenant(ctx.db);

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Parses the first HTTP answer in `text` (a Content-Length body). */
function parseAnswer(text: string): RawAnswer | undefined {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = Buffer.from(text.slice(end + 4));
  if (body.length < length) return undefined;
  const raw = body.subarray(0, length).toString();
  return {
    status: Number(statusLine!.split(' ')[1]),
    headers,
    body: /json/.test(headers['content-type'] ?? '') ? JSON.parse(raw) : raw,
  };
}

/**
 * Sends `head` and then `bodyBytes` bytes of body over a plain socket, reading nothing until all of it
 * is written (as most HTTP clients do), then resolves with the first answer, or the error that ended
 * the connection first.
 */
function rawExchange(head: string, { bodyBytes = 0, halfClose = false } = {}): Promise<RawAnswer | { error: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.pause();
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ error: `no answer; received ${JSON.stringify(received.slice(0, 200))}` });
    }, 15_000);
    const done = (value: RawAnswer | { error: string }) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    socket.on('error', (err) => done({ error: err.message }));
    socket.on('connect', async () => {
      socket.write(head);
      const chunk = Buffer.alloc(64 * 1024, 'a');
      for (let sent = 0; sent < bodyBytes && !socket.destroyed; sent += chunk.length) {
        if (!socket.write(chunk.subarray(0, Math.min(chunk.length, bodyBytes - sent)))) {
          await new Promise((r) => socket.once('drain', r));
        }
      }
      if (halfClose) socket.end();
      socket.on('data', (d) => {
        received += d.toString('latin1');
        const answer = parseAnswer(received);
        if (answer) done(answer);
      });
      socket.on('end', () =>
        done(parseAnswer(received) ?? { error: `connection closed; received ${JSON.stringify(received)}` }),
      );
      socket.resume();
    });
  });
}

const errorShape = (status: number, code: string) => ({
  status,
  headers: { 'content-type': 'application/json' },
  body: { type: 'invalid_request', code, detail: String, attr: null },
});

t.test('oversized headers: 431 in the error shape', async (t) => {
  const answer = await rawExchange(
    `GET /api/projects/ HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(32 * 1024)}\r\n\r\n`,
  );
  t.match(answer, errorShape(431, 'request_header_fields_too_large'));
  t.same(Object.keys((answer as RawAnswer).body ?? {}).sort(), ['attr', 'code', 'detail', 'type']);
});

t.test('a Content-Length that does not describe the body: 400 in the error shape', async (t) => {
  const post = (headers: string) =>
    `POST /api/personal_api_keys/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tenant.key}\r\nContent-Type: ` +
    `application/json\r\n${headers}\r\n`;
  const cases: [string, string, { bodyBytes?: number; halfClose?: boolean }][] = [
    ['not a number', post('Content-Length: abc\r\n'), {}],
    ['two different lengths', post('Content-Length: 2\r\nContent-Length: 3\r\n'), {}],
    ['a body cut short', post('Content-Length: 100\r\n'), { bodyBytes: 10, halfClose: true }],
  ];
  for (const [name, head, opts] of cases) {
    const answer = await rawExchange(head, opts);
    t.match(answer, errorShape(400, 'parse_error'), name);
    t.same(Object.keys((answer as RawAnswer).body ?? {}).sort(), ['attr', 'code', 'detail', 'type'], name);
  }
  const keys = await ctx.call('personal_api_keys_list', { key: tenant.key });
  t.equal(keys.body.length, 1, 'no key was created');
});

t.test('a 413 reaches a client that reads only after sending its whole body', async (t) => {
  const size = 8 * 1024 * 1024;
  const head =
    `POST /api/personal_api_keys/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tenant.key}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`;
  t.match(await rawExchange(head, { bodyBytes: size }), errorShape(413, 'request_too_large'));
  // Without a Content-Length the limit is found only while reading.
  const chunked =
    `POST /api/signup/00000000-0000-4000-8000-000000000000/ HTTP/1.1\r\nHost: x\r\n` +
    `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  t.match(await rawChunked(chunked, size), errorShape(413, 'request_too_large'), 'chunked');
});

/** Like rawExchange, with the body sent in HTTP chunks. */
async function rawChunked(head: string, size: number): Promise<RawAnswer | { error: string }> {
  const chunk = 64 * 1024;
  const piece = `${chunk.toString(16)}\r\n${'a'.repeat(chunk)}\r\n`;
  return rawExchange(`${head + piece.repeat(Math.ceil(size / chunk))}0\r\n\r\n`);
}

t.test('a 413 reaches node:http writing a 2 MiB body, and the server keeps serving', async (t) => {
  const body = Buffer.alloc(2 * 1024 * 1024 + 1, 'a');
  t.ok(body.length > API_BODY_LIMIT);
  const answer = await new Promise<{ status?: number; body?: string; error?: string }>((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/personal_api_keys/',
        headers: {
          authorization: `Bearer ${tenant.key}`,
          'content-type': 'application/json',
          'content-length': body.length,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, body: text }));
        res.on('error', (err) => resolve({ error: err.message }));
      },
    );
    req.on('error', (err) => resolve({ error: err.message }));
    req.end(body);
  });
  t.equal(answer.status, 413, answer.error ?? '');
  t.match(JSON.parse(answer.body ?? '{}'), { type: 'invalid_request', code: 'request_too_large', attr: null });
  const health = await fetch(`http://127.0.0.1:${port}/_health`);
  t.equal(health.status, 200);
});
