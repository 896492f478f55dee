// A user an administrator disabled stays disabled whatever the directory says: Okta's next PUT
// sends `active: true`, Entra ID corrects drift with a PATCH, a POST may link the user, and a
// request without `active` says nothing. The directory enables again only a user it disabled
// itself. During an incident, the administrator's disable_user is final until they enable.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { patchOp, scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const okta = (active?: boolean) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: 'mallory',
  name: { givenName: 'Mallory' },
  ...(active === undefined ? {} : { active }),
});

test('the directory calling a user active does not enable one an administrator disabled; one it disabled itself it enables', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'okta', { scope: 'scim' }));
  const created = await scim.send('POST', 'Users', okta(true));
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = String(created.body?.['id']);
  assert.equal((await portal.post('/create', { user_id: 'mallory', profile_id: 'employees' })).status, 200);

  // The incident: an administrator disables mallory; the directory still has the person active.
  assert.equal((await portal.post('/disable_user', { user_id: 'mallory' })).status, 204);
  const put = await scim.send('PUT', `Users/${id}`, okta(true));
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body?.['active'], false, 'the answer says what holds: disabled');
  await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'Replace', path: 'active', value: 'True' }));
  await scim.send('PUT', `Users/${id}`, okta());
  await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'remove', path: 'active' }));
  assert.deepEqual(await portal.admin.disabledUsers(), ['mallory'], 'still disabled after every request');

  // The administrator enables; now the directory disables and enables the user as it likes.
  assert.equal((await portal.post('/enable_user', { user_id: 'mallory' })).status, 204);
  await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', value: { active: false } }));
  assert.deepEqual(await portal.admin.disabledUsers(), ['mallory']);
  const back = await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', value: { active: true } }));
  assert.equal(back.body?.['active'], true);
  assert.deepEqual(await portal.admin.disabledUsers(), []);
});

test('a person the directory calls inactive is not let back in by an administrator, whoever disabled them first', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const created = await scim.send('POST', 'Users', okta(true));
  const id = String(created.body?.['id']);
  assert.equal((await portal.post('/create', { user_id: 'mallory', profile_id: 'employees' })).status, 200);

  // An incident: the administrator disables mallory. Then mallory leaves, and the directory says so.
  assert.equal((await portal.post('/disable_user', { user_id: 'mallory' })).status, 204);
  await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', path: 'active', value: false }));
  // The incident is over; the administrator enables the users they disabled.
  const enable = await portal.post('/enable_user', { user_id: 'mallory' });
  assert.equal(enable.status, 409, enable.text);
  assert.match(enable.text, /"error":"the directory \(SCIM\) calls this user inactive/);
  assert.deepEqual(await portal.admin.disabledUsers(), ['mallory'], 'the person who left stays out');

  // Mallory comes back: the directory calls them active. The administrator's disable still holds
  // until the administrator lifts it, which now goes through.
  await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', path: 'active', value: true }));
  assert.deepEqual(await portal.admin.disabledUsers(), ['mallory']);
  assert.equal((await portal.post('/enable_user', { user_id: 'mallory' })).status, 204);
  assert.deepEqual(await portal.admin.disabledUsers(), []);

  // Mallory leaves for good: the directory disables them itself, and no administrator's enable undoes it.
  await scim.send('PUT', `Users/${id}`, okta(false));
  assert.equal((await portal.post('/enable_user', { user_id: 'mallory' })).status, 409);
  assert.deepEqual(await portal.admin.disabledUsers(), ['mallory']);
});
