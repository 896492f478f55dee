// A time typed as a wall clock shows it, in the administrator's zone, becomes the right UTC moment.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { knownZone, readConsoleTime } from '../../../src/http/console/local-time.js';
import { param } from '../../../src/protocol/admin-api-params.js';

test('a wall-clock time is read in the browser’s zone, also across a daylight saving change, and one with an offset as it is', () => {
  assert.deepEqual(readConsoleTime('2026-11-28 07:30', 'Europe/Amsterdam'), {
    value: '2026-11-28T06:30:00Z',
    readIn: 'Europe/Amsterdam',
  });
  assert.equal(readConsoleTime('2026-07-01T07:30:15', 'Europe/Amsterdam').value, '2026-07-01T05:30:15Z', 'summer time');
  assert.equal(
    readConsoleTime('2026-03-29 03:30', 'Europe/Amsterdam').value,
    '2026-03-29T01:30:00Z',
    'just after the change',
  );
  assert.equal(readConsoleTime('2026-11-28 07:30', 'America/New_York').value, '2026-11-28T12:30:00Z');
  assert.equal(readConsoleTime(' 2026-11-28 07:30 ', 'UTC').value, '2026-11-28T07:30:00Z');
  assert.deepEqual(readConsoleTime('2026-11-28T07:30:00+01:00', 'America/New_York'), {
    value: '2026-11-28T07:30:00+01:00',
    readIn: null,
  });
  assert.deepEqual(
    readConsoleTime('yesterday', 'UTC'),
    { value: 'yesterday', readIn: null },
    'left to the API to refuse',
  );
});

test('a time written with its zone, as abuse reports and logs write it, is taken as it is, in the form the API reads', () => {
  const asTyped = (typed: string) => readConsoleTime(typed, 'Europe/Amsterdam');
  assert.deepEqual(asTyped('2026-03-01 14:03:07 UTC'), { value: '2026-03-01T14:03:07Z', readIn: null });
  assert.equal(asTyped('2026-03-01 14:03:07Z').value, '2026-03-01T14:03:07Z');
  assert.equal(asTyped('2026-03-01T14:03:07 GMT').value, '2026-03-01T14:03:07Z');
  assert.equal(asTyped('2026-03-01 14:03:07 +0100').value, '2026-03-01T14:03:07+01:00');
  assert.equal(asTyped('2026-03-01 14:03 -05').value, '2026-03-01T14:03-05:00');
  assert.equal(asTyped('2026-03-01 14:03:07.250 utc').value, '2026-03-01T14:03:07.250Z');
  for (const typed of ['2026-03-01 14:03:07 UTC', '2026-03-01 14:03 -05', '2026-03-01 14:03:07.250 utc'])
    assert.ok(param.timestamp.safeParse(asTyped(typed).value).success, `${typed}: the Admin API takes it`);
});

test('a wall-clock time no clock shows (30 February, 24:30, minute 75) is left to the API to refuse, not read as another', () => {
  for (const typed of ['2026-02-30 14:00', '2026-03-01 24:30', '2026-03-01 10:75', '2026-03-01 10:15:60'])
    assert.deepEqual(readConsoleTime(typed, 'Europe/Amsterdam'), { value: typed, readIn: null }, typed);
});

test('a wall-clock time the zone shows twice, or never, across a daylight saving change is refused, asking for the offset, not guessed', () => {
  const doubled = readConsoleTime('2026-10-25 02:30', 'Europe/Amsterdam');
  assert.equal(doubled.readIn, null);
  assert.equal(
    doubled.refusal,
    '2026-10-25 02:30 happens twice in Europe/Amsterdam (at +02:00 and at +01:00): type the time with its offset, as 2026-10-25T02:30+01:00',
  );
  assert.match(
    readConsoleTime('2026-11-01 01:30', 'America/New_York').refusal ?? '',
    /happens twice in America\/New_York \(at -04:00 and at -05:00\)/,
  );
  assert.match(
    readConsoleTime('2026-03-29 02:30', 'Europe/Amsterdam').refusal ?? '',
    /^2026-03-29 02:30 does not happen in Europe\/Amsterdam: the clocks skip it; type the time with its offset/,
  );
  // Lord Howe Island moves its clocks by half an hour.
  assert.match(readConsoleTime('2026-10-04 02:15', 'Australia/Lord_Howe').refusal ?? '', /does not happen/);
  assert.equal(readConsoleTime('2026-10-04 02:45', 'Australia/Lord_Howe').refusal, undefined);
  // Either side of the doubled hour, one moment each.
  assert.deepEqual(readConsoleTime('2026-10-25 01:59', 'Europe/Amsterdam'), {
    value: '2026-10-24T23:59:00Z',
    readIn: 'Europe/Amsterdam',
  });
  assert.equal(readConsoleTime('2026-10-25 03:00', 'Europe/Amsterdam').value, '2026-10-25T02:00:00Z');
});

test('a zone the runtime does not know, or none, is UTC', () => {
  assert.equal(knownZone('Europe/Amsterdam'), 'Europe/Amsterdam');
  assert.equal(knownZone('Mars/Olympus_Mons'), 'UTC');
  assert.equal(knownZone(undefined), 'UTC');
  assert.equal(knownZone(''), 'UTC');
});
