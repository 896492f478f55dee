// A group's members removed by a filter path other than `members[value eq "…"]`, as RFC 7644
// allows (`members[value eq "a" or value eq "b"]`, `members[display eq "…"]`): each member the
// filter matches leaves the group and, with `scim.groupProfiles`, loses the profile it granted.
// A request the portal cannot apply must be refused, never answered 200 with nobody removed: the
// directory then takes the people as gone while they keep their configurations.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { patchOp, scimClient, storedMembers } from '../../support/scim-client.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

async function guestsOf(portal: TestPortal): Promise<string[]> {
  const users = ['ann', 'ben', 'cid'];
  const holding = await Promise.all(
    users.map(async (userId) =>
      (await portal.admin.userConfigurationList(userId)).some((configuration) => configuration.profile_id === 'guests'),
    ),
  );
  return users.filter((_userId, index) => holding[index]);
}

test('the directory removes two guests by one "or" filter and one by display: all three leave the group and lose their guest configurations', async (t) => {
  const portal = await startTestPortal({
    config: { ...twoProfiles, scim: { groupProfiles: { 'VPN Guests': ['guests'] } } },
  });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const ids: Record<string, string> = {};
  for (const userName of ['ann', 'ben', 'cid']) {
    ids[userName] = String((await scim.send('POST', 'Users', { userName })).body?.['id']);
    await portal.admin.create({ user_id: userName, profile_id: 'guests' });
  }
  const group = await scim.send('POST', 'Groups', {
    displayName: 'VPN Guests',
    members: Object.values(ids).map((value) => ({ value })),
  });
  const groupId = String(group.body?.['id']);
  assert.deepEqual(await guestsOf(portal), ['ann', 'ben', 'cid']);

  const two = await scim.send(
    'PATCH',
    `Groups/${groupId}`,
    patchOp({ op: 'remove', path: `members[value eq "${ids['ann']}" or value eq "${ids['ben']}"]` }),
  );
  assert.equal(two.status, 200, JSON.stringify(two.body));
  assert.deepEqual(
    await storedMembers(portal, groupId),
    [ids['cid']],
    'the answer was a success: ann and ben are out of the group',
  );
  assert.equal(two.receipts.length, 2);

  const byDisplay = await scim.send(
    'PATCH',
    `Groups/${groupId}`,
    patchOp({ op: 'remove', path: 'members[display eq "cid"]' }),
  );
  assert.equal(byDisplay.status, 200, JSON.stringify(byDisplay.body));
  assert.deepEqual(await storedMembers(portal, groupId), [], 'the answer was a success: cid is out of the group');
  assert.deepEqual(await guestsOf(portal), [], 'nobody the directory removed keeps a guest configuration');
});
