// Elapsed time and deadlines on the monotonic clock: a step of the wall clock (Date.now(), here a
// test double jumping hours) neither ends a deadline early nor draws out elapsed time.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { AtMostEvery, deadlineIn, elapsedSince, monotonicNow } from '../../src/shared/monotonic.js';

const HOURS = 3 * 60 * 60 * 1000;

/** Steps the wall clock (Date.now()) by `stepMs` until the test ends or `t.mock.restoreAll()`. */
function stepWallClock(t: TestContext, stepMs: number): void {
  const wallNow = Date.now.bind(Date);
  t.mock.method(Date, 'now', () => wallNow() + stepMs);
}

test('a deadline has not passed when the wall clock is set hours forward, and passes in time when it is set back', async (t) => {
  const forward = deadlineIn(200);
  stepWallClock(t, HOURS);
  assert.equal(forward.passed(), false, 'the deadline 200 ms away is still ahead');
  assert.ok(forward.remainingMs() > 100, `most of the 200 ms remain, not ${forward.remainingMs()} ms`);
  t.mock.restoreAll();

  const back = deadlineIn(100);
  stepWallClock(t, -HOURS);
  await sleep(150);
  assert.equal(back.passed(), true, 'the deadline 100 ms away has passed 150 ms later');
  assert.equal(back.remainingMs(), 0);
});

test('elapsed time counts what went by, not how far the wall clock moved', async (t) => {
  const start = monotonicNow();
  stepWallClock(t, HOURS);
  await sleep(50);
  const elapsed = elapsedSince(start);
  assert.ok(elapsed >= 45 && elapsed < 10_000, `about 50 ms went by, not ${elapsed} ms`);
});

test('something allowed at most once per interval is allowed the first time at once, then only after the interval', async (t) => {
  const warnings = new AtMostEvery(100);
  assert.equal(warnings.allow(), true, 'the first time, however soon after the process started');
  stepWallClock(t, HOURS);
  assert.equal(warnings.allow(), false, 'not again at once, though the wall clock moved hours');
  await sleep(120);
  assert.equal(warnings.allow(), true, 'again once the interval went by');
});
