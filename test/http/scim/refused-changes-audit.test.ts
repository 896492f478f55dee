// A change the directory asked for and the portal refused is in the audit log, as the Admin
// API's failed POSTs are (docs/audit-log.md), so the administrator can find out why from the
// portal. A deactivation in a request refused for a rename still holds: refused whole, it would
// leave the person's tunnels running.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditLog, makeAdminKey } from '../../support/admin-keys.js';
import { patchOp, scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

test('a PATCH that renames the user and deactivates it is refused for the rename, yet the user is disabled, and the refusal is in the audit log with why', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', { userName: 'alice', active: true });
  const id = String(made.body?.['id']);

  // The person left: the directory renames the account and deactivates it in one PATCH.
  const refused = await scim.send(
    'PATCH',
    `Users/${id}`,
    patchOp({ op: 'Replace', path: 'userName', value: 'zz-alice' }, { op: 'Replace', path: 'active', value: 'False' }),
  );
  assert.equal(refused.status, 400);
  assert.equal(refused.body?.['scimType'], 'mutability');
  assert.deepEqual(await portal.admin.disabledUsers(), ['alice'], 'the deactivation holds: no tunnel of hers runs on');
  const again = await scim.send('GET', `Users/${id}`);
  assert.equal(again.body?.['userName'], 'alice', 'the rename is not saved');

  const rows = (await auditLog(portal))
    .filter((record) => record.keyName === 'entra')
    .map((record) => [record.call, record.status, record.userId, record.detail]);
  assert.deepEqual(rows.reverse(), [
    ['scim POST /Users', 201, 'alice', null],
    [
      'scim PATCH /Users',
      400,
      'alice',
      'userName is the user id on this portal ("alice") and cannot change; delete the user and create it again (the user is disabled, as the same request asked)',
    ],
  ]);
});

test('every change request of the directory that changed nothing is in the audit log once, with what it was about; reads and changes made are not recorded twice', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', { userName: 'bob', active: true });
  const id = String(made.body?.['id']);
  const group = await scim.send('POST', 'Groups', { displayName: 'Staff', members: [{ value: id }] });
  const groupId = String(group.body?.['id']);
  const missing = '00000000-0000-4000-8000-000000000000';

  const answers = [
    await scim.send('POST', 'Users', { userName: 'BOB' }),
    await scim.send('POST', 'Users', { userName: 'carol', active: 'maybe' }),
    await scim.send('PATCH', `Users/${missing}`, patchOp({ op: 'Replace', path: 'active', value: false })),
    await scim.send('DELETE', `Users/${missing}`),
    await scim.send('PATCH', `Groups/${groupId}`, patchOp({ op: 'remove', path: 'members[emails eq "x"]' })),
    await scim.send('DELETE', 'Widgets/1'),
    await scim.send('GET', `Users/${missing}`),
    await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'Replace', path: 'displayName', value: 'Bob' })),
  ];
  assert.deepEqual(
    answers.map((answer) => answer.status),
    [409, 400, 404, 404, 400, 404, 404, 200],
  );

  const rows = (await auditLog(portal))
    .filter((record) => record.keyName === 'entra')
    .reverse()
    .map((record) => [record.call, record.status, record.userId, record.parameters]);
  assert.deepEqual(rows, [
    ['scim POST /Users', 201, 'bob', { user_id: 'bob' }],
    ['scim POST /Groups', 201, null, { group: 'Staff' }],
    ['scim POST /Users', 409, 'BOB', { user_id: 'BOB' }],
    ['scim POST /Users', 400, 'carol', { user_id: 'carol' }],
    ['scim PATCH /Users', 404, null, { id: missing }],
    ['scim DELETE /Users', 404, null, { id: missing }],
    ['scim PATCH /Groups', 400, null, { id: groupId, group: 'Staff' }],
    ['scim DELETE /Widgets/1', 404, null, {}],
    ['scim PATCH /Users', 200, 'bob', { id, user_id: 'bob' }],
  ]);
  const details = (await auditLog(portal)).filter((record) => record.status === 409).map((record) => record.detail);
  assert.deepEqual(details, ['a User with userName "bob" exists already']);
});
