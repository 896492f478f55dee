// Connection history breaks ties of its second-precise times by these ids, so they must sort as made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeOrderedId, timeOrderedIdAfter } from '../../src/shared/time-ordered-id.js';

test('ids made one after another sort in that order, within one millisecond too', () => {
  const ids = Array.from({ length: 10_000 }, () => timeOrderedId(1_795_000_000_000));
  assert.deepEqual([...ids].sort(), ids);
  assert.equal(new Set(ids).size, ids.length);
});

test('an id is a version 7 UUID whose first 48 bits are the time it was made', () => {
  const id = timeOrderedId(1_795_586_971_147);
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16), 1_795_586_971_147);
});

test('a clock that steps back does not make a later id sort first', () => {
  const before = timeOrderedId(1_900_000_000_000);
  const after = timeOrderedId(1_899_999_999_000);
  assert.ok(after > before);
});

/** An id another process made at `millis` with counter `counter`. */
function idOfAnotherProcess(millis: number, counter: number): string {
  const hex = millis.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-${(0x7000 | counter).toString(16)}-8000-000000000000`;
}

const timeOf = (id: string): number => Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);

test('an id made to follow one of a process whose clock runs ahead sorts after it, and this process goes on from its own clock', () => {
  const ahead = idOfAnotherProcess(2_000_000_030_000, 5);
  const after = timeOrderedIdAfter(ahead, 2_000_000_000_000);
  assert.ok(after > ahead);
  assert.match(after, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(timeOf(after), 2_000_000_030_000);
  const atCounterEnd = idOfAnotherProcess(2_000_000_030_000, 0xfff);
  const overflowed = timeOrderedIdAfter(atCounterEnd, 2_000_000_000_000);
  assert.ok(overflowed > atCounterEnd);
  assert.equal(timeOf(overflowed), 2_000_000_030_001);
  assert.equal(timeOf(timeOrderedId(2_000_000_000_500)), 2_000_000_000_500, 'ids of anything else keep this clock');
  const passed = timeOrderedIdAfter(ahead, 2_000_000_040_000);
  assert.equal(timeOf(passed), 2_000_000_040_000, 'once this clock is past it, a fresh id');
});
