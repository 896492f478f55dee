// RFC 7643 makes a User's userName case-insensitive ("caseExact": false), and Entra ID treats
// user principal names so: once the case of a person's name changed in the directory (an
// administrator fixing `Alice@…` to `alice@…`), a directory that matches users again (a restarted
// provisioning, a new tenant app) asks for the name in its new case. It must find the user it
// provisioned, not make a second portal user whose disable and delete leave the first one's
// tunnels running.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { patchOp, resourcesOf, scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

test('a directory that asks again for its user with the name in another case finds it, and a POST of that name makes no second user', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', { userName: 'Alice@Example.org', active: true });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  await portal.admin.create({ user_id: 'Alice@Example.org', profile_id: 'employees' });

  // Provisioning restarted; the name is now written in lower case in the directory.
  const lookup = await scim.send('GET', `Users?filter=${encodeURIComponent('userName eq "alice@example.org"')}`);
  assert.equal(lookup.status, 200);
  assert.deepEqual(
    resourcesOf<{ id: string }>(lookup).map((user) => user.id),
    [made.body?.['id']],
    'userName eq compares without regard to case: the directory finds the user it made',
  );
  const again = await scim.send('POST', 'Users', { userName: 'alice@example.org', active: true });
  assert.equal(again.status, 409, 'the same userName in another case is the same User: uniqueness');
  assert.deepEqual(await portal.admin.users(), ['Alice@Example.org'], 'no second portal user');
});

test('a PUT and a PATCH that write the userName in another case are applied, and the portal user keeps its id; another name is still refused', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', { userName: 'Alice@Example.org', active: true });
  const id = String(made.body?.['id']);

  const put = await scim.send('PUT', `Users/${id}`, {
    userName: 'alice@example.org',
    displayName: 'Alice',
    active: true,
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body?.['userName'], 'Alice@Example.org', 'the user id is the portal’s and stays as it is');
  assert.equal(put.body?.['displayName'], 'Alice');

  const patch = await scim.send(
    'PATCH',
    `Users/${id}`,
    patchOp(
      { op: 'Replace', path: 'userName', value: 'ALICE@EXAMPLE.ORG' },
      { op: 'Replace', path: 'active', value: 'False' },
    ),
  );
  assert.equal(patch.status, 200, JSON.stringify(patch.body));
  assert.equal(patch.body?.['active'], false);
  assert.deepEqual(await portal.admin.disabledUsers(), ['Alice@Example.org']);

  const renamed = await scim.send(
    'PATCH',
    `Users/${id}`,
    patchOp({ op: 'Replace', path: 'userName', value: 'alicia@example.org' }),
  );
  assert.equal(renamed.status, 400);
  assert.equal(renamed.body?.['scimType'], 'mutability');
  assert.deepEqual(await portal.admin.users(), ['Alice@Example.org']);
});

test('a portal user made otherwise, whose id differs from a SCIM user’s only in case, is a user of its own: user ids stay case-exact outside SCIM', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  await portal.admin.create({ user_id: 'BOB', profile_id: 'employees' });
  const linked = await scim.send('POST', 'Users', { userName: 'BOB', active: true });
  assert.equal(linked.status, 201, JSON.stringify(linked.body));
  const again = await scim.send('POST', 'Users', { userName: 'bob', active: true });
  assert.equal(again.status, 409, 'the directory has a User of that name in any case already');
  const lookup = await scim.send('GET', `Users?filter=${encodeURIComponent('userName eq "Bob"')}`);
  assert.deepEqual(
    resourcesOf<{ userName: string }>(lookup).map((user) => user.userName),
    ['BOB'],
  );
  assert.deepEqual(await portal.admin.users(), ['BOB', 'bob'], 'both portal users are there, as they were');
});
