// The limited-parallel helper: at most `limit` tasks at once, and a failure settles everything started before it rejects.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { forEachLimited } from '../../src/shared/limited-parallel.js';

test('runs every item with no more than the limit in flight', async () => {
  let inFlight = 0;
  let most = 0;
  const done: number[] = [];
  await forEachLimited([1, 2, 3, 4, 5, 6, 7], 3, async (item) => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((resolve) => setTimeout(resolve, 5));
    done.push(item);
    inFlight--;
  });
  assert.equal(most, 3);
  assert.deepEqual(
    done.sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6, 7],
  );
});

test('after a failure it starts no new item and rejects only once the items under way have settled', async () => {
  const started: number[] = [];
  const finished: number[] = [];
  let releaseSlow = (): void => {};
  const slow = new Promise<void>((resolve) => (releaseSlow = resolve));
  let settled = false;
  const run = forEachLimited([1, 2, 3, 4, 5], 2, async (item) => {
    started.push(item);
    if (item === 1) {
      await slow;
      finished.push(item);
      return;
    }
    throw new Error(`item ${item} failed`);
  }).finally(() => {
    settled = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(settled, false, 'still waiting for the item under way');
  assert.deepEqual(started, [1, 2], 'nothing new started after the failure');
  releaseSlow();
  await assert.rejects(run, /item 2 failed/);
  assert.deepEqual(finished, [1]);
  assert.deepEqual(started, [1, 2]);
});
