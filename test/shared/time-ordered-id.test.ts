// Connection history breaks ties of its second-precise times by these ids, so they must sort as made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeOrderedId } from '../../src/shared/time-ordered-id.js';

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
