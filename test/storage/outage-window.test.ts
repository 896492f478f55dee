// The outage window a call rides out is measured on the monotonic clock: a step of the wall clock
// (Date.now(), here a test double jumping hours) neither closes it at once nor keeps it open.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { OutageWindow } from '../../src/storage/outage-window.js';

const HOURS = 3 * 60 * 60 * 1000;

/** Steps the wall clock (Date.now()) by `stepMs` until the test ends. */
function stepWallClock(t: TestContext, stepMs: number): void {
  const wallNow = Date.now.bind(Date);
  t.mock.method(Date, 'now', () => wallNow() + stepMs);
}

test('a call may still try again within its window when the wall clock is set hours forward', (t) => {
  const outage = new OutageWindow(10_000);
  assert.equal(outage.lost(false), true, 'the first loss opens a window');
  stepWallClock(t, HOURS);
  assert.equal(outage.allows(500), true, 'a pause of 500 ms still ends within the 10 s window');
});

test('the window closes once its length went by, though the wall clock was set hours back', async (t) => {
  const outage = new OutageWindow(200);
  outage.lost(false);
  stepWallClock(t, -HOURS);
  assert.equal(outage.allows(0), true, 'at first the call may try again');
  await sleep(250);
  assert.equal(outage.allows(0), false, 'after 250 ms the 200 ms window is over');
});
