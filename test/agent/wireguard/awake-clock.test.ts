// The agent's time awake: what it counts while running and while it stood still, and why the
// memory of removals is measured on it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AwakeClock } from '../../../src/agent/wireguard/awake-clock.js';
import { PeerRevisions } from '../../../src/agent/wireguard/revisions.js';

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

test('an agent stopped for a quarter of an hour right after a disable still refuses the add that waited in its socket', () => {
  let monotonic = 0;
  const clock = new AwakeClock(() => monotonic);
  const revisions = new PeerRevisions(() => clock.now());
  assert.equal(revisions.admit('alice', 'add', 5), true);
  assert.equal(revisions.admit('alice', 'remove', 7), true, 'disable_user reaches the node');
  // SIGSTOP: the monotonic clock runs on, the agent does not.
  monotonic += 15 * 60_000;
  assert.equal(
    revisions.admit('alice', 'add', 5),
    false,
    'the add a reconcile pass read before the disable is still older than the removal',
  );
});

test('running ten minutes after a removal forgets it, so the memory stays bounded', () => {
  let monotonic = 0;
  const clock = new AwakeClock(() => monotonic);
  const revisions = new PeerRevisions(() => clock.now());
  assert.equal(revisions.admit('bob', 'remove', 9), true);
  for (let second = 0; second <= 11 * 60; second++) {
    monotonic += 1_000;
    clock.now();
  }
  assert.equal(revisions.removalCount, 1, 'not yet pruned: nothing has asked');
  assert.equal(revisions.admit('carol', 'add', 1), true);
  assert.equal(revisions.admit('bob', 'add', 2), true, 'forgotten after more than ten minutes awake');
  assert.equal(revisions.removalCount, 0);
});

test('the clock never goes back, however the monotonic readings come', () => {
  let monotonic = 5_000;
  const clock = new AwakeClock(() => monotonic);
  monotonic += 2_000;
  const first = clock.now();
  monotonic -= 1_000;
  assert.equal(clock.now(), first);
});
