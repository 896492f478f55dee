// The Admin API's date parameters: a day that is not one of the calendar is refused as a bad
// value (a 400), never thrown as an error (a 500), and never read as another day.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { param } from '../../src/protocol/admin-api-params.js';

test('a date of no calendar day (month 13, 30 February) is refused, not thrown, and a real one is kept', () => {
  for (const text of ['2026-13-45', '2026-02-30', '2026-00-10'])
    assert.equal(param.date.safeParse(text).success, false, text);
  assert.equal(param.date.parse('2028-02-29'), '2028-02-29');
  for (const text of ['2026-13-45T10:00:00Z', '2026-02-30'])
    assert.equal(param.timestamp.safeParse(text).success, false, text);
  // Date reads hour 24 as the next midnight: the time of another day than the one written.
  for (const text of ['2026-03-01T24:00Z', '2026-03-01T24:00:00+01:00', '2026-12-31T24:00:00.000Z'])
    assert.equal(param.timestamp.safeParse(text).success, false, text);
  assert.equal(param.timestamp.parse('2028-02-29T10:00:00+01:00'), '2028-02-29T09:00:00+00:00');
});
