// A test's waits are measured on the monotonic clock: the wall clock set forward while a test
// waits (NTP, a virtual machine's clock stepped) neither ends the wait early nor fails the test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeLimit, until } from './until.js';

test('a test waiting for the portal is not failed early when the wall clock is set an hour forward meanwhile', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  let checks = 0;
  await until(
    'the third check',
    async () => {
      checks += 1;
      if (checks === 1) t.mock.timers.tick(3_600_000);
      return checks === 3;
    },
    5_000,
  );
  assert.equal(checks, 3);
});

test('a time limit counts only the time that went by, whatever the wall clock says, and a wait fails once it passed', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const limit = timeLimit(300);
  t.mock.timers.tick(3_600_000);
  assert.equal(limit.passed(), false);
  assert.ok(limit.elapsedMs() < 300, `${limit.elapsedMs()} ms gone by`);
  await assert.rejects(
    until('a check that never passes', async () => false, 300),
    /a check that never passes within 300 ms/,
  );
});
