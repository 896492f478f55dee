// The retention's batches (src/storage/batches.ts): they run until one does fewer than the limit,
// or the caller says to stop between two, and add up exactly what each did.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inBatches } from '../../src/storage/batches.js';

/** A batch over `rows` rows: each call takes at most `limit` of what is left, and notes its size. */
function table(rows: number) {
  let left = rows;
  const calls: number[] = [];
  const batch = async (limit: number): Promise<number> => {
    const done = Math.min(limit, left);
    left -= done;
    calls.push(done);
    return done;
  };
  return { batch, calls, left: () => left };
}

test('batches run until one does fewer than the limit, and the total is what they did', async () => {
  const rows = table(2_500);
  assert.equal(await inBatches(rows.batch, undefined, 1_000), 2_500);
  assert.deepEqual(rows.calls, [1_000, 1_000, 500]);
});

test('rows that fill the last batch exactly take one more, empty, to know they are all done', async () => {
  const rows = table(2_000);
  assert.equal(await inBatches(rows.batch, undefined, 1_000), 2_000);
  assert.deepEqual(rows.calls, [1_000, 1_000, 0]);
});

test('a stop asked for between two batches ends there, counting what went', async () => {
  const rows = table(5_000);
  let asked = 0;
  assert.equal(await inBatches(rows.batch, () => ++asked === 2, 1_000), 2_000);
  assert.deepEqual(rows.calls, [1_000, 1_000]);
  assert.equal(rows.left(), 3_000, 'the rest is left for the next run');
});
