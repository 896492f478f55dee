// A revocation is final across portal instances too: two portals share one PostgreSQL database
// and one node; both notice the node coming back and reconcile it, while disables arrive at
// both. Whichever instance's add reaches the node last, a disabled user's peer stays off.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { raceDisablesAgainstRecovery } from '../../support/revocation-race.js';

test("PostgreSQL, two portal instances: no disabled user's peer is on the node after its disable_user answered on either instance", async () => {
  const outcome = await raceDisablesAgainstRecovery({ users: 100, configurationsPerUser: 20, portals: 2 });
  assert.ok(
    outcome.peersSetAfterDisablesBegan > 0,
    'the recovery passes were still adding peers when the disables began (the race happened)',
  );
  assert.ok(outcome.samples >= 20, `the node was sampled often (${outcome.samples} samples)`);
  assert.deepEqual(outcome.violations, []);
  assert.equal(outcome.peersLeftAtEnd, 0, 'every user is disabled: the node holds no peer');
});
