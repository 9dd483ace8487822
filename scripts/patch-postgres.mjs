// Runs after `npm install`/`npm ci`: fixes in postgres.js (3.4.9) what a database restart or a
// terminated backend does to a connection (porsager/postgres#1223, and the reserved-connection and
// transaction cases around it), until a release carries fixes upstream.
//
// 1. A connection that closes mid-query keeps that query and its error; the first query after the
//    reconnect fails with that stale error, minutes later if the connection stays idle (#1223).
//    `closed()` now fails what was running with the server's error and forgets it.
// 2. A byte chunk queued for the old socket was kept and its flush timer left set, so the next
//    socket's startup message was never sent (the connection hung until connect_timeout).
// 3. A query sent on a reserved connection or a transaction after its socket closed wrote to a null
//    socket (an uncaught TypeError that ends the process) and never settled; if the connection had
//    reconnected meanwhile, it ran on the new session, outside its transaction. Such a query now
//    fails with CONNECTION_CLOSED, and releasing such a reserved connection no longer hands a
//    closed connection to the pool as open.
// 4. The array types fetched on connect: its promise was dropped, so its failure was an unhandled
//    rejection (which ends the process); the waiting query already gets the error.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = '/* patched: connection faults */';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', 'postgres');

const connection = [
  [
    `  function execute(q) {
    if (terminated)`,
    `  function execute(q) {
    if (!socket && !initial) ${MARK}
      return queryError(q, Errors.connection('CONNECTION_CLOSED', options))

    if (terminated)`,
  ],
  [
    `  async function closed(hadError) {
    incoming = Buffer.alloc(0)
    remaining = 0
    incomings = null
    clearImmediate(nextWriteTimer)`,
    `  async function closed(hadError) {
    incoming = Buffer.alloc(0)
    remaining = 0
    incomings = null
    clearImmediate(nextWriteTimer)
    chunk = nextWriteTimer = null
    connection.closes++`,
  ],
  [
    `    if (initial)
      return reconnect()

    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))`,
    `    const lost = errorResponse || Errors.connection('CONNECTION_CLOSED', options, socket)
    if (initial) {
      query && query !== initial && queryError(query, lost)
      query = results = errorResponse = final = null
      result = new Result()
      rows = 0
      return reconnect()
    }

    !hadError && (query || sent.length) && error(lost)
    query = results = errorResponse = final = stream = null
    result = new Result()
    rows = 0`,
  ],
  [
    `        return fetchArrayTypes()`,
    `        return fetchArrayTypes().catch(noop)`,
  ],
  [
    `    cancel,
    end,
    count: 0,`,
    `    cancel,
    end,
    closes: 0,
    count: 0,`,
  ],
];

const index = [
  [
    `    move(c, reserved)
    c.reserved = () => queue.length
      ? c.execute(queue.shift())
      : move(c, reserved)
    c.reserved.release = true

    const sql = Sql(handler)
    sql.release = () => {
      c.reserved = null
      onopen(c)
    }

    return sql

    function handler(q) {
      c.queue === full`,
    `    move(c, reserved)
    c.reserved = () => queue.length
      ? c.execute(queue.shift())
      : move(c, reserved)
    c.reserved.release = true
    const session = c.closes ${MARK}

    const sql = Sql(handler)
    sql.release = () => {
      if (c.closes !== session)
        return
      c.reserved = null
      onopen(c)
    }

    return sql

    function handler(q) {
      if (c.closes !== session)
        return q.reject(Errors.connection('CONNECTION_CLOSED', options))
      c.queue === full`,
  ],
  [
    `      function handler(q) {
        q.catch(e => uncaughtError || (uncaughtError = e))
        c.queue === full`,
    `      function handler(q) {
        q.catch(e => uncaughtError || (uncaughtError = e))
        if (c.closes !== session)
          return q.reject(Errors.connection('CONNECTION_CLOSED', options))
        c.queue === full`,
  ],
  [
    `    let savepoints = 0
      , connection
      , prepare = null`,
    `    let savepoints = 0
      , connection
      , session ${MARK}
      , prepare = null`,
  ],
  [
    `    function onexecute(c) {
      connection = c
      move(c, reserved)`,
    `    function onexecute(c) {
      connection = c
      session = c.closes
      move(c, reserved)`,
  ],
];

function patch(file, edits) {
  if (!existsSync(file)) return;
  let text = readFileSync(file, 'utf8');
  if (text.includes(MARK)) return;
  for (const [from, to] of edits) {
    const at = text.indexOf(from);
    if (at < 0 || text.indexOf(from, at + 1) >= 0) {
      throw new Error(`${file}: the code to patch is not as expected; is postgres still 3.4.9? See scripts/patch-postgres.mjs.`);
    }
    text = text.slice(0, at) + to + text.slice(at + from.length);
  }
  writeFileSync(file, text);
}

if (existsSync(root)) {
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  if (version !== '3.4.9') throw new Error(`postgres ${version}: scripts/patch-postgres.mjs is written for 3.4.9; check what it fixes against the new release.`);
  for (const dir of ['src', 'cjs/src']) {
    patch(join(root, dir, 'connection.js'), connection);
    patch(join(root, dir, 'index.js'), index);
  }
}
