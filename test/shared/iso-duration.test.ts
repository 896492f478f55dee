// ISO 8601 durations as PHP's DateInterval reads them (reference §3, §10): which texts are
// durations, and what adding one to a UTC time gives, calendar overflow included.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  addDuration,
  durationMilliseconds,
  isBoundedIsoDuration,
  isIsoDuration,
  isWithinMaxDuration,
  parseIsoDuration,
  subtractDurationClamped,
  type IsoDuration,
} from '../../src/shared/iso-duration.js';

function parsed(text: string): IsoDuration {
  const duration = parseIsoDuration(text);
  assert.ok(duration !== null, `${text} should be a duration`);
  return duration;
}

function after(start: string, text: string): string {
  return addDuration(new Date(start), parsed(text)).toISOString();
}

test('the designator forms the portal configuration and expires_in use', () => {
  assert.deepEqual(parsed('P90D'), { text: 'P90D', years: 0, months: 0, days: 90, hours: 0, minutes: 0, seconds: 0 });
  assert.deepEqual(parsed('PT12H'), { text: 'PT12H', years: 0, months: 0, days: 0, hours: 12, minutes: 0, seconds: 0 });
  assert.deepEqual(parsed('P1Y'), { text: 'P1Y', years: 1, months: 0, days: 0, hours: 0, minutes: 0, seconds: 0 });
  assert.deepEqual(parsed('P1Y2M3DT4H5M6S'), {
    text: 'P1Y2M3DT4H5M6S',
    years: 1,
    months: 2,
    days: 3,
    hours: 4,
    minutes: 5,
    seconds: 6,
  });
  assert.equal(parsed('PT30M').minutes, 30);
  assert.equal(parsed('PT45S').seconds, 45);
  assert.equal(parsed('P0D').days, 0);
});

test('weeks, alone and (as PHP 8) combined with days', () => {
  assert.equal(parsed('P2W').days, 14);
  assert.equal(parsed('P1W2D').days, 9);
  assert.equal(after('2026-01-01T00:00:00Z', 'P2W'), '2026-01-15T00:00:00.000Z');
});

test('the alternative form PYYYY-MM-DDTHH:MM:SS', () => {
  assert.deepEqual(parsed('P0001-02-03T04:05:06'), {
    text: 'P0001-02-03T04:05:06',
    years: 1,
    months: 2,
    days: 3,
    hours: 4,
    minutes: 5,
    seconds: 6,
  });
  assert.equal(after('2026-01-01T00:00:00Z', 'P0000-00-30T12:00:00'), '2026-01-31T12:00:00.000Z');
});

test('texts that are not durations', () => {
  const invalid = [
    '',
    'P',
    'PT',
    'P1DT',
    'T1H',
    '1D',
    'P1',
    'PT1',
    'p90d',
    'P90d',
    'pt12h', // case-sensitive
    '-P1D',
    'P-1D',
    '+P1D', // no signs
    'P1.5D',
    'PT0.5H',
    'P1,5D', // no fractions
    'P1D1Y',
    'PT1H1D',
    'P1H',
    'PT1Y', // wrong order or wrong part
    ' P1D',
    'P1D ',
    'P1D\n',
    'P 1D',
    'P0001-02-03',
    'P1-2-3T4:5:6',
  ];
  for (const text of invalid) {
    assert.equal(parseIsoDuration(text), null, JSON.stringify(text));
    assert.equal(isIsoDuration(text), false, JSON.stringify(text));
  }
  for (const text of ['P90D', 'PT12H', 'P1Y', 'P2W', 'P1W2D', 'P0001-02-03T04:05:06'])
    assert.equal(isIsoDuration(text), true, text);
});

test('the reference test vector: 2021-04-06T09:00Z + P90D = 2021-07-05T09:00:00Z', () => {
  assert.equal(after('2021-04-06T09:00:00Z', 'P90D'), '2021-07-05T09:00:00.000Z');
});

test('calendar units overflow as PHP: P1M from 31 January lands on 3 March in a common year, 2 March in a leap year', () => {
  assert.equal(after('2026-01-31T10:00:00Z', 'P1M'), '2026-03-03T10:00:00.000Z');
  assert.equal(after('2024-01-31T10:00:00Z', 'P1M'), '2024-03-02T10:00:00.000Z');
  assert.equal(after('2026-03-31T00:00:00Z', 'P1M'), '2026-05-01T00:00:00.000Z');
  // P1Y from 29 February: 1 March of the next year.
  assert.equal(after('2024-02-29T12:00:00Z', 'P1Y'), '2025-03-01T12:00:00.000Z');
  // Months carry into years.
  assert.equal(after('2026-11-15T00:00:00Z', 'P3M'), '2027-02-15T00:00:00.000Z');
});

test('a retention reckons months back to the same day, or the last day of a shorter month, never overflowing into the month it started from', () => {
  const before = (end: string, text: string) => subtractDurationClamped(new Date(end), parsed(text)).toISOString();
  assert.equal(before('2026-03-31T12:00:00Z', 'P1M'), '2026-02-28T12:00:00.000Z');
  assert.equal(before('2024-03-31T12:00:00Z', 'P1M'), '2024-02-29T12:00:00.000Z');
  assert.equal(before('2026-03-15T12:00:00Z', 'P1M'), '2026-02-15T12:00:00.000Z');
  assert.equal(before('2026-08-31T00:00:00Z', 'P6M'), '2026-02-28T00:00:00.000Z');
  assert.equal(before('2026-01-31T00:00:00Z', 'P2M'), '2025-11-30T00:00:00.000Z');
  assert.equal(before('2025-02-28T08:00:00Z', 'P1Y'), '2024-02-28T08:00:00.000Z');
  assert.equal(before('2028-02-29T08:00:00Z', 'P1Y'), '2027-02-28T08:00:00.000Z');
  // Days and times go back after the months, as they are.
  assert.equal(before('2026-03-31T12:00:00Z', 'P1M1DT2H'), '2026-02-27T10:00:00.000Z');
  assert.equal(before('2026-03-01T00:00:00Z', 'P30D'), '2026-01-30T00:00:00.000Z');
  assert.equal(before('2026-01-10T12:00:00Z', 'PT12H'), '2026-01-10T00:00:00.000Z');
});

test('adding in UTC: hours carry across days, months and years; no daylight saving applies', () => {
  assert.equal(after('2026-01-31T10:00:00Z', 'PT12H'), '2026-01-31T22:00:00.000Z');
  assert.equal(after('2026-01-31T22:00:00Z', 'PT12H'), '2026-02-01T10:00:00.000Z');
  assert.equal(after('2026-12-31T23:59:30Z', 'PT45S'), '2027-01-01T00:00:15.000Z');
  // Across the European DST change of 29 March 2026 a day is still 24 hours.
  assert.equal(after('2026-03-28T12:00:00Z', 'P1D'), '2026-03-29T12:00:00.000Z');
  assert.equal(after('2026-01-31T10:00:00Z', 'P90D'), '2026-05-01T10:00:00.000Z');
  assert.equal(after('2026-01-31T10:00:00Z', 'P1Y2M3DT4H5M6S'), '2027-04-03T14:05:06.000Z');
});

test('addDuration does not change its start and durationMilliseconds measures fixed lengths', () => {
  const start = new Date('2026-01-31T10:00:00Z');
  addDuration(start, parsed('P1Y'));
  assert.equal(start.toISOString(), '2026-01-31T10:00:00.000Z');
  assert.equal(durationMilliseconds(parsed('PT1M')), 60_000);
  assert.equal(durationMilliseconds(parsed('P1W')), 7 * 24 * 3600 * 1000);
});

test('a century is the longest duration taken; longer ones, and ones past any date JavaScript holds, are not', () => {
  const start = new Date('2026-03-02T09:00:00Z');
  for (const text of ['P100Y', 'P1200M', 'P36500D', 'PT1H', 'P0001-00-00T00:00:00'])
    assert.equal(isBoundedIsoDuration(text, start), true, text);
  for (const text of ['P101Y', 'P100YT1S', 'P8000Y', 'P999999999Y', 'PT99999999999999999999S', `P${'9'.repeat(400)}D`])
    assert.equal(isBoundedIsoDuration(text, start), false, text);
  assert.equal(isBoundedIsoDuration('100 years', start), false, 'not a duration at all');
  assert.equal(isWithinMaxDuration(parsed('P999999999Y'), start), false);
});
