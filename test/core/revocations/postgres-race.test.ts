// A revocation is final across portal instances too: two portals share one PostgreSQL database
// and one node; both notice the node coming back and reconcile it, while disables arrive at
// both. Whichever instance's add reaches the node last, a disabled user's peer stays off once
// the node confirmed its removal. An instance that still holds the node for down (its probe
// has not seen it back) glances at it for 200 ms; on a busy machine the node may answer later,
// and that disable's receipt is pending until the instance's recovery pass confirms it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { raceDisablesAgainstRecovery } from '../../support/revocation-race.js';

test("PostgreSQL, two portal instances: no disabled user's peer is on the node after the node confirmed its removal to either instance", async (t) => {
  const outcome = await raceDisablesAgainstRecovery({ users: 100, configurationsPerUser: 20, portals: 2 });
  assert.ok(
    outcome.peersSetAfterDisablesBegan > 0,
    'the recovery passes were still adding peers when the disables began (the race happened)',
  );
  assert.ok(outcome.samples >= 20, `the node was sampled often (${outcome.samples} samples)`);
  t.diagnostic(`${outcome.pendingAtAnswer} of 100 receipts were pending when disable_user answered`);
  assert.deepEqual(outcome.violations, []);
  assert.deepEqual(outcome.neverConfirmed, [], 'every removal was confirmed within seconds');
  assert.equal(outcome.peersLeftAtEnd, 0, 'every user is disabled: the node holds no peer');
});
