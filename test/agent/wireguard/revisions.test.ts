// The node agent's rule for ordering peer instructions: the newest revision wins, whatever
// order the instructions arrive in; removals are remembered long enough to outlive any late add.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PeerRevisions } from '../../../src/agent/wireguard/revisions.js';
import { AwakeClock } from '../../../src/shared/awake-clock.js';

test('an add older than the last removal of its key is ignored, a newer one applies', () => {
  const revisions = new PeerRevisions(() => 0);
  assert.equal(revisions.admit('alice', 'add', 5), true);
  assert.equal(revisions.admit('alice', 'remove', 7), true, 'disable_user');
  assert.equal(revisions.admit('alice', 'add', 5), false, 'a reconcile pass read the peer before the disable');
  assert.equal(revisions.admit('alice', 'add', 9), true, 'enable_user');
  assert.equal(revisions.highest, 9);
});

test('a removal older than the last add of its key is ignored: a late disable never undoes a later enable', () => {
  const revisions = new PeerRevisions(() => 0);
  assert.equal(revisions.admit('bob', 'add', 12), true, 'enable_user arrived first');
  assert.equal(revisions.admit('bob', 'remove', 11), false, 'the earlier disable arrived late');
});

test('equal revisions: the later arrival wins, so a peer removed for its profile leaving the node can come back', () => {
  const revisions = new PeerRevisions(() => 0);
  assert.equal(revisions.admit('carol', 'add', 3), true);
  assert.equal(revisions.admit('carol', 'remove', 3), true);
  assert.equal(revisions.admit('carol', 'add', 3), true);
});

test('instructions without a revision always apply and forget what was known about the key', () => {
  const revisions = new PeerRevisions(() => 0);
  assert.equal(revisions.admit('dave', 'remove', 20), true);
  assert.equal(revisions.admit('dave', 'add', null), true, 'a script using the plain vpn-daemon protocol');
  assert.equal(revisions.admit('dave', 'add', 1), true);
});

test('a removal is remembered for ten minutes, then forgotten', () => {
  let now = 0;
  const revisions = new PeerRevisions(() => now);
  assert.equal(revisions.admit('erin', 'remove', 8), true);
  now = 9 * 60_000;
  assert.equal(revisions.admit('erin', 'add', 2), false, 'still remembered after nine minutes');
  now = 21 * 60_000;
  assert.equal(revisions.admit('frank', 'add', 1), true);
  assert.equal(revisions.admit('erin', 'add', 2), true, 'forgotten after more than ten minutes since the removal');
});

test('removals taken back after a restart hold as if never forgotten; those older than ten minutes do not come back', () => {
  const revisions = new PeerRevisions(() => 0);
  revisions.restore([
    { publicKey: 'gina', revision: 30, agoMs: 60_000 },
    { publicKey: 'hugo', revision: 31, agoMs: 11 * 60_000 },
  ]);
  assert.equal(revisions.admit('gina', 'add', 29), false);
  assert.equal(revisions.admit('hugo', 'add', 29), true);
  assert.equal(revisions.highest, 30);
  assert.deepEqual(revisions.removals(), [{ publicKey: 'gina', revision: 30, agoMs: 60_000 }]);
  assert.equal(revisions.removalCount, 1, 'hugo was added back');
  assert.equal(revisions.admit('gina', 'add', 32), true);
  assert.equal(revisions.removalCount, 0);
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
