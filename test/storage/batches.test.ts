// The retention's batches (src/storage/batches.ts): they run until one does fewer than the limit,
// or the caller says to stop between two, and add up exactly what each did; and the counts that
// read a page at a time, each after the last key of the one before.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countInBatches, inBatches } from '../../src/storage/batches.js';

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

test('a count reads pages after the last key of the one before, until one is short, and counts only what counts', async () => {
  const keys = Array.from({ length: 2_500 }, (_, i) => i);
  const asked: (number | undefined)[] = [];
  const total = await countInBatches<number>(async (after, limit) => {
    asked.push(after);
    return keys
      .filter((key) => after === undefined || key > after)
      .slice(0, limit)
      .map((key) => ({ key, counts: key % 3 === 0 }));
  }, 1_000);
  assert.equal(total, 834);
  assert.deepEqual(asked, [undefined, 999, 1_999]);
});

test('a count whose last page is full reads one more, empty, and an empty one counts nothing', async () => {
  const pages = [[{ key: 'a', counts: true }], []];
  let read = 0;
  assert.equal(await countInBatches<string>(async () => pages[read++] ?? [], 1), 1);
  assert.equal(read, 2);
  assert.equal(await countInBatches<string>(async () => [], 1), 0);
});
