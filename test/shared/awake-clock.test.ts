// A process's time awake: what it counts while running and while it stood still (SIGSTOP, a
// paused VM), and that it never goes back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AwakeClock } from '../../src/shared/awake-clock.js';

test('time spent running counts in full, a quarter of an hour stopped counts as a few seconds', () => {
  let monotonic = 1_000;
  const clock = new AwakeClock(() => monotonic);
  for (let second = 0; second < 60; second++) {
    monotonic += 1_000;
    clock.now();
  }
  assert.equal(clock.now(), 60_000, 'a minute of ticks is a minute awake');
  monotonic += 15 * 60_000;
  const afterTheStop = clock.now();
  assert.ok(afterTheStop > 60_000 && afterTheStop <= 65_000, `awake ${afterTheStop} ms after a 15-minute stop`);
});

test('the clock never goes back, however the monotonic readings come', () => {
  let monotonic = 5_000;
  const clock = new AwakeClock(() => monotonic);
  monotonic += 2_000;
  const first = clock.now();
  monotonic -= 1_000;
  assert.equal(clock.now(), first);
});
