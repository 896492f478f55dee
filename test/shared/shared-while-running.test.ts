// A read shared while it runs: callers at the same time get one read's result, or its failure;
// a caller after it settled gets a new read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sharedWhileRunning } from '../../src/shared/shared-while-running.js';

/** A read that counts its runs and settles when told. */
function controlledRead(): { read: () => Promise<number>; runs: () => number; settle: (error?: Error) => void } {
  let runs = 0;
  let finish: ((error?: Error) => void) | undefined;
  return {
    read: () => {
      runs++;
      const run = runs;
      return new Promise<number>((resolve, reject) => {
        finish = (error) => (error === undefined ? resolve(run) : reject(error));
      });
    },
    runs: () => runs,
    settle: (error) => finish?.(error),
  };
}

test('callers while a read runs share it, and a caller after it settled starts another', async () => {
  const source = controlledRead();
  const shared = sharedWhileRunning(source.read);
  const first = shared();
  const second = shared();
  source.settle();
  assert.deepEqual(await Promise.all([first, second]), [1, 1]);
  assert.equal(source.runs(), 1);
  const third = shared();
  source.settle();
  assert.equal(await third, 2);
  assert.equal(source.runs(), 2);
});

test('a failed read fails every caller that shared it, and the next caller reads again', async () => {
  const source = controlledRead();
  const shared = sharedWhileRunning(source.read);
  const first = shared();
  const second = shared();
  source.settle(new Error('database gone'));
  await assert.rejects(first, /database gone/);
  await assert.rejects(second, /database gone/);
  const third = shared();
  source.settle();
  assert.equal(await third, 2);
});
