// A directory may name the core schema itself: as a PATCH path (RFC 7644 §3.5.2 lets a path be
// a schema's URN), its value holding the user's attributes, or as a key of a POST's or PUT's
// User holding them. Refused or ignored, the `active: false` of a person who left would leave
// their tunnels running while the directory took them as disabled.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

test('a directory PATCHes its user by the core schema URN as path with active false: the user is disabled with a receipt, and back with active true', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'directory', { scope: 'scim' }));
  const userName = 'hugo@example.org';
  const made = await scim.send('POST', 'Users', { schemas: [USER], userName, active: true });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const id = String(made.body?.['id']);
  await portal.admin.create({ user_id: userName, profile_id: 'employees' });

  const left = await scim.send('PATCH', `Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'Replace', path: USER, value: { active: 'False', displayName: 'Hugo (left)' } }],
  });
  assert.equal(left.status, 200, JSON.stringify(left.body));
  assert.deepEqual([left.body?.['active'], left.body?.['displayName']], [false, 'Hugo (left)']);
  assert.equal(left.receipts.length, 1, 'the disable has its receipt');
  assert.deepEqual(await portal.admin.disabledUsers(), [userName]);

  const back = await scim.send('PATCH', `Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'add', path: USER.toUpperCase(), value: { Active: true } }],
  });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  assert.equal(back.body?.['active'], true);
  assert.deepEqual(await portal.admin.disabledUsers(), []);

  // A remove of the whole resource is still refused, and changes nothing.
  const removed = await scim.send('PATCH', `Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'remove', path: USER, value: { active: false } }],
  });
  assert.equal(removed.status, 400, JSON.stringify(removed.body));
  assert.deepEqual(await portal.admin.disabledUsers(), []);

  // A title changed by that path says nothing of `active`: the user stays as it is.
  const titled = await scim.send('PATCH', `Users/${id}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'replace', path: USER, value: { title: 'Engineer' } }],
  });
  assert.equal(titled.status, 200, JSON.stringify(titled.body));
  assert.deepEqual([titled.body?.['active'], titled.body?.['title']], [true, 'Engineer']);
});

test('a group PATCHed by the core Group schema URN as path takes the members its value gives', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'directory', { scope: 'scim' }));
  const user = await scim.send('POST', 'Users', { schemas: [USER], userName: 'ines@example.org' });
  assert.equal(user.status, 201, JSON.stringify(user.body));
  const group = await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'VPN Staff' });
  assert.equal(group.status, 201, JSON.stringify(group.body));

  const added = await scim.send('PATCH', `Groups/${String(group.body?.['id'])}`, {
    schemas: [PATCH_OP],
    Operations: [{ op: 'add', path: GROUP, value: { members: [{ value: String(user.body?.['id']) }] } }],
  });
  assert.equal(added.status, 200, JSON.stringify(added.body));
  assert.deepEqual(
    (added.body?.['members'] as { value: string }[] | undefined)?.map((member) => member.value),
    [String(user.body?.['id'])],
  );
});

test('a PUT holding active false under the core schema URN as a key disables the user, and the same attribute given there and bare with two values is refused', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'directory', { scope: 'scim' }));
  const userName = 'jana@example.org';
  const made = await scim.send('POST', 'Users', { schemas: [USER], userName, active: true });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const id = String(made.body?.['id']);
  await portal.admin.create({ user_id: userName, profile_id: 'employees' });

  const twice = await scim.send('PUT', `Users/${id}`, {
    schemas: [USER],
    userName,
    active: true,
    [USER]: { active: false },
  });
  assert.equal(twice.status, 400, JSON.stringify(twice.body));
  assert.equal(twice.body?.['scimType'], 'invalidSyntax');
  assert.deepEqual(await portal.admin.disabledUsers(), [], 'nothing of the refused request was applied');

  const left = await scim.send('PUT', `Users/${id}`, { schemas: [USER], userName, [USER]: { active: false } });
  assert.equal(left.status, 200, JSON.stringify(left.body));
  assert.equal(left.body?.['active'], false);
  assert.equal(left.receipts.length, 1, 'the disable has its receipt');
  assert.deepEqual(await portal.admin.disabledUsers(), [userName]);
});
