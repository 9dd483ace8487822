import t from 'tap';
import { isoTimestamp } from '../src/db/queries/util.js';

// The forms PostgreSQL writes a timestamptz in (as text, and in JSON), in UTC and in other zones: each
// must give what a Date of it writes, the contract's form.
t.test('isoTimestamp writes what Date#toISOString writes', async (t) => {
  for (const text of [
    '2026-11-24 01:31:38.257757+00',
    '2026-11-24T01:31:38.257757+00:00',
    '2026-11-24 01:31:38+00',
    '2026-11-24T01:31:38+00:00',
    '2026-11-24 01:31:38.5+00',
    '2026-11-24T01:31:38.12+00:00',
    '2026-11-24 01:31:38.999999+00',
    '2026-11-24 03:31:38.257757+02',
    '2026-11-24T01:31:38.257757-05:30',
  ]) {
    t.equal(isoTimestamp(text), new Date(text).toISOString(), text);
  }
  t.equal(isoTimestamp('2026-11-24 01:31:38.5+00'), '2026-11-24T01:31:38.500Z');
});
