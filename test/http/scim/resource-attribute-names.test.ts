// A directory may write the attributes of a whole User or Group (POST, PUT) qualified by their
// schema's URN (`urn:ietf:params:scim:schemas:core:2.0:User:active`, RFC 7644) or in another case
// (`Active`, `USERNAME`: RFC 7643 names are case-insensitive), as PATCH values are read. A PUT
// whose URN-qualified `active: false` was dropped answered 200 and left the person's tunnels
// running while the directory took them as disabled; and an attribute given twice with two
// values must be refused rather than one of them picked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';

test('a directory PUTs its user with the URN-qualified active false: the user is disabled and its configurations leave the nodes with a receipt', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'directory', { scope: 'scim' }));
  const userName = 'frank@example.org';
  const made = await scim.send('POST', 'Users', { schemas: [USER], userName, active: true });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const id = String(made.body?.['id']);
  await portal.admin.create({ user_id: userName, profile_id: 'employees' });
  const configurations = (await portal.admin.userConfigurationList(userName)).map((entry) => entry.connection_id);

  const put = await scim.send('PUT', `Users/${id}`, {
    schemas: [USER],
    userName,
    [`${USER}:displayName`]: 'Frank',
    [`${USER}:active`]: false,
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body?.['active'], false, 'the answer says what holds: disabled');
  assert.equal(put.body?.['displayName'], 'Frank');
  assert.equal(put.receipts.length, 1, 'the disable has its receipt');
  const receipt = (await portal.admin.revocations()).find((entry) => entry.revocation_id === put.receipts[0]);
  assert.deepEqual(
    [receipt?.user_id, receipt?.reason, receipt?.connection_ids],
    [userName, 'disable_user', configurations],
  );
  assert.deepEqual(await portal.admin.disabledUsers(), [userName]);

  // Back, written in capitals: enabled again.
  const back = await scim.send('PUT', `Users/${id}`, { schemas: [USER], USERNAME: userName, Active: 'True' });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  assert.equal(back.body?.['active'], true);
  assert.deepEqual(await portal.admin.disabledUsers(), []);
});

test('a POST with qualified and capitalised names links and disables the person, a group POSTed so holds its members, and one attribute given twice with two values is refused and changes nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'directory', { scope: 'scim' }));
  const userName = 'gina@example.org';
  await portal.admin.create({ user_id: userName, profile_id: 'employees' });

  const linked = await scim.send('POST', 'Users', {
    schemas: [USER],
    USERNAME: userName,
    [`${USER}:externalId`]: 'g-7',
    DisplayName: 'Gina',
    [`${USER.toUpperCase()}:ACTIVE`]: 'False',
  });
  assert.equal(linked.status, 201, JSON.stringify(linked.body));
  assert.deepEqual(
    [linked.body?.['userName'], linked.body?.['externalId'], linked.body?.['displayName'], linked.body?.['active']],
    [userName, 'g-7', 'Gina', false],
  );
  assert.equal(linked.receipts.length, 1, 'the disable has its receipt');
  assert.deepEqual(await portal.admin.disabledUsers(), [userName]);
  const id = String(linked.body?.['id']);

  const group = await scim.send('POST', 'Groups', {
    schemas: [GROUP],
    [`${GROUP}:displayName`]: 'VPN Staff',
    ExternalId: 'g-staff',
    [`${GROUP}:members`]: [{ value: id }],
  });
  assert.equal(group.status, 201, JSON.stringify(group.body));
  assert.deepEqual(
    [group.body?.['displayName'], group.body?.['externalId'], group.body?.['members']],
    ['VPN Staff', 'g-staff', [{ value: id, display: userName, type: 'User' }]],
  );

  const twice = await scim.send('POST', 'Users', {
    schemas: [USER],
    userName: 'hank@example.org',
    active: true,
    [`${USER}:active`]: false,
  });
  assert.equal(twice.status, 400, JSON.stringify(twice.body));
  assert.deepEqual(twice.body, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    status: '400',
    scimType: 'invalidSyntax',
    detail:
      '"active" is given twice with different values (attribute names are case-insensitive, and may be qualified by their schema\'s URN)',
  });
  const renamed = await scim.send('PUT', `Groups/${String(group.body?.['id'])}`, {
    schemas: [GROUP],
    displayName: 'VPN Staff',
    DISPLAYNAME: 'VPN Guests',
  });
  assert.deepEqual([renamed.status, renamed.body?.['scimType']], [400, 'invalidSyntax']);
  assert.deepEqual(await portal.admin.users(), [userName], 'no user made by the refused POST');
  const kept = await scim.send('GET', `Groups/${String(group.body?.['id'])}`);
  assert.equal(kept.body?.['displayName'], 'VPN Staff', 'the refused PUT changed nothing');
});
