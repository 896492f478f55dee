// A revocation is final: once the node confirmed a removal (during disable_user, whose receipt
// then says applied, or within seconds after it) the device's peer is off the node and stays
// off, even while the portal is putting thousands of peers back on a node that just came back
// (its recovery pass read them from the database before the disable).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { raceDisablesAgainstRecovery } from '../../support/revocation-race.js';

test("no disabled user's peer is on the node at any moment after the node confirmed its removal, while a recovery pass adds 2,000 peers", async (t) => {
  const outcome = await raceDisablesAgainstRecovery({ users: 100, configurationsPerUser: 20, portals: 1 });
  assert.ok(
    outcome.peersSetAfterDisablesBegan > 0,
    'the recovery pass was still adding peers when the disables began (the race happened)',
  );
  assert.ok(outcome.samples >= 20, `the node was sampled often (${outcome.samples} samples)`);
  t.diagnostic(`${outcome.pendingAtAnswer} of 100 receipts were pending when disable_user answered`);
  assert.deepEqual(outcome.violations, []);
  assert.deepEqual(outcome.neverConfirmed, [], 'every removal was confirmed within seconds');
  assert.equal(outcome.peersLeftAtEnd, 0, 'every user is disabled: the node holds no peer');
});
