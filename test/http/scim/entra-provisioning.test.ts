// A replay of what Entra ID's provisioning service sends (its documented request shapes: the
// userName filter before a create, PATCH with `op` in capitals, values without a path, string
// booleans, member removal by `members[value eq "…"]`) against the real portal: the user is
// made, disabled and enabled with receipts, loses the configurations of the profile its group
// granted when it leaves the group, and is destroyed; every change is audited with its key.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditLog, makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { patchOp, scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

test('an Entra ID provisioning cycle makes, disables, enables, narrows and destroys a user, with receipts and audit rows', async (t) => {
  const portal = await startTestPortal({
    config: { ...twoProfiles, scim: { groupProfiles: { 'VPN Guests': ['guests'] } } },
  });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const userName = 'alice@example.org';

  // Entra first asks whether the user exists: an empty list, not a 404.
  const lookup = await scim.send('GET', `Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
  assert.equal(lookup.status, 200);
  assert.equal(lookup.contentType, 'application/scim+json; charset=utf-8');
  assert.deepEqual(lookup.body, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
    totalResults: 0,
    startIndex: 1,
    itemsPerPage: 0,
    Resources: [],
  });

  const created = await scim.send('POST', 'Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE],
    externalId: 'alice',
    userName,
    active: true,
    displayName: 'Alice Liddell',
    emails: [{ primary: true, type: 'work', value: userName }],
    name: { formatted: 'Alice Liddell', familyName: 'Liddell', givenName: 'Alice' },
    [ENTERPRISE]: { department: 'Research' },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const userId = String(created.body?.['id']);
  // Locations are public: under baseUrl, not the address the test reached the portal at.
  assert.equal(created.headers.get('location'), `http://127.0.0.1/vpn-user-portal/scim/v2/Users/${userId}`);
  assert.equal(created.body?.['userName'], userName);
  assert.equal(created.body?.['active'], true);
  assert.deepEqual(created.body?.['name'], { formatted: 'Alice Liddell', familyName: 'Liddell', givenName: 'Alice' });
  assert.deepEqual(created.body?.[ENTERPRISE], { department: 'Research' });
  assert.deepEqual(created.body?.['schemas'], ['urn:ietf:params:scim:schemas:core:2.0:User', ENTERPRISE]);
  assert.deepEqual(await portal.admin.users(), [userName], 'the user exists in the portal as one made by create');

  const group = await scim.send('POST', 'Groups', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
    externalId: 'g-guests',
    displayName: 'VPN Guests',
    members: [],
  });
  assert.equal(group.status, 201, JSON.stringify(group.body));
  const groupId = String(group.body?.['id']);
  const added = await scim.send(
    'PATCH',
    `Groups/${groupId}`,
    patchOp({ op: 'Add', path: 'members', value: [{ value: userId }] }),
  );
  assert.equal(added.status, 200, JSON.stringify(added.body));
  assert.deepEqual(added.body?.['members'], [{ value: userId, display: userName, type: 'User' }]);

  // Attribute updates as Entra sends them: a typed entry and an enterprise attribute.
  const updated = await scim.send(
    'PATCH',
    `Users/${userId}`,
    patchOp(
      { op: 'Add', path: 'phoneNumbers[type eq "mobile"].value', value: '+31 6 1234 5678' },
      { op: 'Replace', path: `${ENTERPRISE}:department`, value: 'Physics' },
    ),
  );
  assert.equal(updated.status, 200, JSON.stringify(updated.body));
  assert.deepEqual(updated.body?.['phoneNumbers'], [{ type: 'mobile', value: '+31 6 1234 5678' }]);
  assert.deepEqual(updated.body?.[ENTERPRISE], { department: 'Physics' });

  await portal.admin.create({ user_id: userName, profile_id: 'guests' });
  await portal.admin.create({ user_id: userName, profile_id: 'employees' });

  // Entra's disable: Replace, with a string boolean.
  const disabled = await scim.send(
    'PATCH',
    `Users/${userId}`,
    patchOp({ op: 'Replace', path: 'active', value: 'False' }),
  );
  assert.equal(disabled.status, 200, JSON.stringify(disabled.body));
  assert.equal(disabled.body?.['active'], false);
  assert.equal(disabled.receipts.length, 1);
  const disabledReceipt = (await portal.admin.revocations()).find(
    (receipt) => receipt.revocation_id === disabled.receipts[0],
  );
  assert.deepEqual([disabledReceipt?.user_id, disabledReceipt?.reason], [userName, 'disable_user']);
  assert.deepEqual(await portal.admin.disabledUsers(), [userName]);

  // …and back, as a value object without a path.
  const enabled = await scim.send('PATCH', `Users/${userId}`, patchOp({ op: 'Replace', value: { active: 'True' } }));
  assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
  assert.equal(enabled.body?.['active'], true);
  assert.deepEqual(enabled.receipts, []);
  // Entra repeats what is already so: nothing to do, and no error.
  const again = await scim.send('PATCH', `Users/${userId}`, patchOp({ op: 'Replace', path: 'active', value: 'True' }));
  assert.deepEqual([again.status, again.body?.['active'], again.receipts], [200, true, []]);
  assert.deepEqual([await portal.admin.users(), await portal.admin.disabledUsers()], [[userName], []]);

  // Out of the group that granted `guests`: that profile's configuration goes, `employees` (in no mapping) stays.
  const removed = await scim.send(
    'PATCH',
    `Groups/${groupId}`,
    patchOp({ op: 'Remove', path: `members[value eq "${userId}"]` }),
  );
  assert.equal(removed.status, 200, JSON.stringify(removed.body));
  assert.deepEqual(removed.body?.['members'], []);
  assert.equal(removed.receipts.length, 1);
  const removedReceipt = (await portal.admin.revocations()).find(
    (receipt) => receipt.revocation_id === removed.receipts[0],
  );
  assert.deepEqual([removedReceipt?.user_id, removedReceipt?.reason], [userName, 'delete_connection']);
  assert.deepEqual(
    (await portal.admin.userConfigurationList(userName)).map((configuration) => configuration.profile_id),
    ['employees'],
  );

  const deleted = await scim.send('DELETE', `Users/${userId}`);
  assert.equal(deleted.status, 204);
  assert.equal(deleted.receipts.length, 1);
  const destroyedReceipt = (await portal.admin.revocations()).find(
    (receipt) => receipt.revocation_id === deleted.receipts[0],
  );
  assert.deepEqual([destroyedReceipt?.user_id, destroyedReceipt?.reason], [userName, 'destroy']);
  assert.deepEqual(await portal.admin.users(), []);
  const gone = await scim.send('GET', `Users/${userId}`);
  assert.equal(gone.status, 404);
  assert.deepEqual((await scim.send('GET', `Groups/${groupId}`)).body?.['members'], []);

  const changes = (await auditLog(portal))
    .filter((record) => record.keyName === 'entra')
    .map((record) => [record.call, record.userId, record.status])
    .reverse();
  assert.deepEqual(changes, [
    ['scim POST /Users', userName, 201],
    ['scim POST /Groups', null, 201],
    ['scim PATCH /Groups', null, 200],
    ['scim PATCH /Users', userName, 200],
    // The disable and the enable are each saved with the attributes, in one change: one row per call.
    ['scim PATCH /Users', userName, 200],
    ['scim PATCH /Users', userName, 200],
    ['scim PATCH /Users', userName, 200],
    ['scim PATCH /Groups', null, 200],
    ['scim PATCH /Groups', userName, 200],
    ['scim DELETE /Users', userName, 204],
  ]);
});

test("URN-qualified paths and attribute names in any case, also the PatchOp message's own, disable, enable and move members; an unknown attribute is invalidPath and changes nothing", async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const user = 'urn:ietf:params:scim:schemas:core:2.0:User';
  const group = 'urn:ietf:params:scim:schemas:core:2.0:Group';
  const created = await scim.send('POST', 'Users', { userName: 'carol@example.org', active: true });
  const userId = String(created.body?.['id']);
  const path = `Users/${userId}`;

  const disabled = await scim.send('PATCH', path, patchOp({ op: 'Replace', path: `${user}:active`, value: 'False' }));
  assert.deepEqual([disabled.status, disabled.body?.['active'], disabled.receipts.length], [200, false, 1]);
  const enabled = await scim.send('PATCH', path, patchOp({ op: 'Replace', value: { Active: 'True' } }));
  assert.deepEqual([enabled.status, enabled.body?.['active']], [200, true]);
  const renamed = await scim.send(
    'PATCH',
    path,
    patchOp({ op: 'Replace', value: { [`${user}:displayName`]: 'Carol', 'Name.GivenName': 'Carol' } }),
  );
  assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
  assert.deepEqual([renamed.body?.['displayName'], renamed.body?.['name']], ['Carol', { givenName: 'Carol' }]);

  const staff = await scim.send('POST', 'Groups', { displayName: 'Staff' });
  const groupPath = `Groups/${String(staff.body?.['id'])}`;
  const joined = await scim.send(
    'PATCH',
    groupPath,
    patchOp({ op: 'Add', path: `${group}:members`, value: [{ Value: userId }] }),
  );
  assert.deepEqual(joined.body?.['members'], [{ value: userId, display: 'carol@example.org', type: 'User' }]);
  const left = await scim.send('PATCH', groupPath, patchOp({ op: 'Remove', path: `Members[Value eq "${userId}"]` }));
  assert.deepEqual(left.body?.['members'], []);
  const again = await scim.send('PATCH', groupPath, {
    SCHEMAS: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    operations: [{ OP: 'Add', Path: 'members', VALUE: [{ value: userId }] }],
  });
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.deepEqual(again.body?.['members'], [{ value: userId, display: 'carol@example.org', type: 'User' }]);

  const before = await scim.send('GET', path);
  for (const operation of [
    { op: 'Replace', path: 'favouriteColour', value: 'blue' },
    { op: 'Replace', value: { active: 'False', favouriteColour: 'blue' } },
  ]) {
    const refused = await scim.send('PATCH', path, patchOp(operation));
    assert.deepEqual([refused.status, refused.body?.['scimType']], [400, 'invalidPath'], JSON.stringify(refused.body));
    assert.match(String(refused.body?.['detail']), /favouriteColour/);
  }
  assert.deepEqual((await scim.send('GET', path)).body, before.body);
  assert.deepEqual(await portal.admin.disabledUsers(), []);
});
