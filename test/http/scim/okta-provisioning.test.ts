// A replay of what Okta's SCIM 2.0 provisioning sends (its documented request shapes: the
// userName filter with startIndex and count, a create with a password it must not keep, a PUT
// of the whole user to update it, `active` by PATCH to deactivate and reactivate, group push
// with members added and removed) against the real portal; and a user already in the portal
// is linked by its userName, not made twice.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { patchOp, resourcesOf, scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';

function oktaUser(userName: string, givenName: string, active: boolean): Record<string, unknown> {
  return {
    schemas: [USER_SCHEMA],
    userName,
    name: { givenName, familyName: 'Builder' },
    emails: [{ primary: true, value: userName, type: 'work' }],
    displayName: `${givenName} Builder`,
    locale: 'en-US',
    externalId: '00u1abcd',
    groups: [],
    password: 'correct horse battery staple',
    active,
  };
}

test('an Okta provisioning cycle finds, creates, replaces, deactivates and reactivates a user, and pushes a group', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'okta', { scope: 'scim' }));
  const userName = 'bob@example.org';
  const filter = `Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}&startIndex=1&count=100`;

  assert.deepEqual((await scim.send('GET', filter)).body?.['totalResults'], 0);
  const created = await scim.send('POST', 'Users', oktaUser(userName, 'Bob', true));
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = String(created.body?.['id']);
  assert.equal(created.body?.['password'], undefined, 'a password is never kept nor answered');
  const stored = await portal.portal.ctx.db.selectFrom('scim_users').select('attributes').executeTakeFirstOrThrow();
  assert.doesNotMatch(stored.attributes, /horse/);

  const found = await scim.send('GET', filter);
  assert.deepEqual(
    [found.body?.['totalResults'], resourcesOf<{ id: string }>(found).map((user) => user.id)],
    [1, [id]],
  );
  const read = await scim.send('GET', `Users/${id}`);
  assert.deepEqual(read.body, created.body);

  const replaced = await scim.send('PUT', `Users/${id}`, { ...oktaUser(userName, 'Robert', true), id });
  assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
  assert.deepEqual(replaced.body?.['name'], { givenName: 'Robert', familyName: 'Builder' });
  assert.deepEqual(replaced.receipts, []);

  await portal.admin.create({ user_id: userName, profile_id: 'employees' });
  const deactivated = await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', value: { active: false } }));
  assert.equal(deactivated.status, 200, JSON.stringify(deactivated.body));
  assert.equal(deactivated.body?.['active'], false);
  assert.equal(deactivated.receipts.length, 1);
  assert.deepEqual(await portal.admin.disabledUsers(), [userName]);
  assert.deepEqual(
    (await portal.admin.userConfigurationList(userName)).map((configuration) => configuration.profile_id),
    ['employees'],
    'a disabled user keeps its configurations, as with disable_user',
  );

  const reactivated = await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', value: { active: true } }));
  assert.equal(reactivated.body?.['active'], true);
  assert.deepEqual(await portal.admin.disabledUsers(), []);

  // Group push: the group made with its member, then members added and removed.
  const carol = await scim.send('POST', 'Users', {
    ...oktaUser('carol@example.org', 'Carol', true),
    externalId: '00u2',
  });
  const carolId = String(carol.body?.['id']);
  const group = await scim.send('POST', 'Groups', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
    displayName: 'Engineering',
    members: [{ value: id, display: userName }],
  });
  assert.equal(group.status, 201, JSON.stringify(group.body));
  const groupId = String(group.body?.['id']);
  const pushed = await scim.send(
    'PATCH',
    `Groups/${groupId}`,
    patchOp(
      { op: 'remove', path: `members[value eq "${id}"]` },
      { op: 'add', path: 'members', value: [{ value: carolId, display: 'carol@example.org' }] },
    ),
  );
  assert.equal(pushed.status, 200, JSON.stringify(pushed.body));
  assert.deepEqual(pushed.body?.['members'], [{ value: carolId, display: 'carol@example.org', type: 'User' }]);
  const renamed = await scim.send('PUT', `Groups/${groupId}`, {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
    displayName: 'Engineering EU',
    members: [{ value: carolId }, { value: id }],
  });
  assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
  const byName = await scim.send('GET', `Groups?filter=${encodeURIComponent('displayName eq "Engineering EU"')}`);
  assert.deepEqual(
    resourcesOf<{ members: { display: string }[] }>(byName).map((entry) =>
      entry.members.map((member) => member.display),
    ),
    [['bob@example.org', 'carol@example.org']],
  );
  assert.equal((await scim.send('DELETE', `Groups/${groupId}`)).status, 204);
  assert.equal((await scim.send('GET', `Groups/${groupId}`)).status, 404);
  assert.deepEqual(await portal.admin.users(), ['bob@example.org', 'carol@example.org'], 'a group leaves its users be');
});

test('with scim.linkExistingUsers false a user made otherwise is not handed to the directory: the POST is refused and changes nothing', async (t) => {
  const portal = await startTestPortal({ config: { scim: { linkExistingUsers: false } } });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'okta', { scope: 'scim' }));
  await portal.admin.create({ user_id: 'dave@example.org', profile_id: 'employees' });

  const refused = await scim.send('POST', 'Users', oktaUser('dave@example.org', 'Dave', false));
  assert.equal(refused.status, 409);
  assert.deepEqual(refused.body, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    status: '409',
    scimType: 'uniqueness',
    detail:
      'a user "dave@example.org" exists on this portal, made otherwise than by the directory; it is not handed to the directory while scim.linkExistingUsers is false',
  });
  assert.deepEqual(await portal.admin.disabledUsers(), [], 'not disabled');
  assert.equal((await portal.admin.userConfigurationList('dave@example.org')).length, 1);
  const found = await scim.send('GET', `Users?filter=${encodeURIComponent('userName eq "dave@example.org"')}`);
  assert.equal(found.body?.['totalResults'], 0, 'the directory holds no handle on the user');
  assert.deepEqual(await portal.admin.users(), ['dave@example.org']);
});

test('a user already in the portal is linked by its userName, keeps its configurations, and is disabled when created inactive', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'okta', { scope: 'scim' }));
  await portal.admin.create({ user_id: 'dave@example.org', profile_id: 'employees' });

  const linked = await scim.send('POST', 'Users', oktaUser('dave@example.org', 'Dave', false));
  assert.equal(linked.status, 201, JSON.stringify(linked.body));
  assert.equal(linked.body?.['active'], false);
  assert.equal(linked.receipts.length, 1, 'the disable has its receipt');
  assert.deepEqual(
    [await portal.admin.users(), await portal.admin.disabledUsers()],
    [['dave@example.org'], ['dave@example.org']],
  );
  assert.equal((await portal.admin.userConfigurationList('dave@example.org')).length, 1);

  const again = await scim.send('POST', 'Users', oktaUser('dave@example.org', 'Dave', true));
  assert.equal(again.status, 409);
  assert.deepEqual(again.body, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    status: '409',
    scimType: 'uniqueness',
    detail: 'a User with userName "dave@example.org" exists already',
  });
  assert.deepEqual(await portal.admin.disabledUsers(), ['dave@example.org'], 'the refused create changed nothing');
});
