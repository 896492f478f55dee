// A directory finds a group by `displayName eq "…"` letter case aside (RFC 7643: a Group's
// displayName is not case-exact), and Entra ID looks a group up so before it makes it. A second
// group whose name differed only in case (made by a POST, or by renaming another group) made
// that filter answer two groups for one name, which directories take for an error, and showed
// an administrator two groups that look the same. Such a POST or rename is refused with 409
// uniqueness, as an exact duplicate is; a group renamed to its own name in another case is
// renamed; case twins made before this stay readable and editable.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { patchOp, resourcesOf, scimClient, seedScimGroup, storedMembers } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';

/** A portal with a directory's SCIM key; helpers to make a user and a group, and to list groups by name. */
async function directoryFor(t: TestContext) {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const userId = async (userName: string): Promise<string> => {
    const made = await scim.send('POST', 'Users', { userName, active: true });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return String(made.body?.['id']);
  };
  const groupId = async (displayName: string, memberIds: readonly string[] = []): Promise<string> => {
    const made = await scim.send('POST', 'Groups', {
      schemas: [GROUP],
      displayName,
      members: memberIds.map((value) => ({ value })),
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return String(made.body?.['id']);
  };
  const named = async (displayName: string): Promise<string[]> => {
    const filter = `displayName eq ${JSON.stringify(displayName)}`;
    const answer = await scim.send('GET', `Groups?filter=${encodeURIComponent(filter)}`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return resourcesOf<{ displayName: string }>(answer).map((group) => group.displayName);
  };
  const allNames = async (): Promise<string[]> =>
    resourcesOf<{ displayName: string }>(await scim.send('GET', 'Groups'))
      .map((group) => group.displayName)
      .sort();
  return { portal, scim, userId, groupId, named, allNames };
}

function assertTaken(answer: { status: number; body: Record<string, unknown> | null }, message: string): void {
  assert.equal(answer.status, 409, JSON.stringify(answer.body));
  assert.equal(answer.body?.['scimType'], 'uniqueness');
  assert.equal(answer.body?.['detail'], message);
}

test('a POST of a group whose displayName differs only in letter case from a group here is refused with 409, and makes no second group', async (t) => {
  const { scim, groupId, named, allNames } = await directoryFor(t);
  await groupId('VPN Staff');

  assertTaken(
    await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'vpn staff' }),
    'a Group with displayName "VPN Staff" exists already ("vpn staff" differs from it only in letter case)',
  );
  assertTaken(
    await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'VPN Staff' }),
    'a Group with displayName "VPN Staff" exists already',
  );
  // Lower-cased as Unicode has it, on both databases.
  await groupId('Équipe VPN');
  assert.equal((await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'équipe vpn' })).status, 409);

  assert.deepEqual(await named('vpn staff'), ['VPN Staff'], 'the filter answers one group for the name');
  assert.deepEqual(await allNames(), ['Équipe VPN', 'VPN Staff'].sort());
});

test('a PUT or a PATCH that would rename a group to another group’s name in another case is refused with 409, and the group stays as it was', async (t) => {
  const { portal, scim, userId, groupId, named } = await directoryFor(t);
  const kim = await userId('kim@example.org');
  const lou = await userId('lou@example.org');
  await groupId('VPN Staff', [kim]);
  const admins = await groupId('VPN Admins', [lou]);
  const before = await scim.send('GET', `Groups/${admins}`);

  assertTaken(
    await scim.send('PUT', `Groups/${admins}`, {
      schemas: [GROUP],
      displayName: 'vpn staff',
      members: [{ value: lou }, { value: kim }],
    }),
    'a Group with displayName "VPN Staff" exists already ("vpn staff" differs from it only in letter case)',
  );
  assertTaken(
    await scim.send(
      'PATCH',
      `Groups/${admins}`,
      patchOp(
        { op: 'replace', path: 'displayName', value: 'VPN STAFF' },
        { op: 'add', path: 'members', value: [{ value: kim }] },
      ),
    ),
    'a Group with displayName "VPN Staff" exists already ("VPN STAFF" differs from it only in letter case)',
  );
  assertTaken(
    await scim.send('PATCH', `Groups/${admins}`, patchOp({ op: 'replace', value: { displayName: 'Vpn Staff' } })),
    'a Group with displayName "VPN Staff" exists already ("Vpn Staff" differs from it only in letter case)',
  );

  const after = await scim.send('GET', `Groups/${admins}`);
  assert.deepEqual(after.body, before.body, 'name, members and lastModified as they were');
  assert.deepEqual(await storedMembers(portal, admins), [lou]);
  assert.deepEqual(await named('vpn staff'), ['VPN Staff']);
});

test('a group renamed to its own name in another case is renamed, by PUT and by PATCH', async (t) => {
  const { scim, userId, groupId, named } = await directoryFor(t);
  const kim = await userId('kim@example.org');
  const staff = await groupId('VPN Staff', [kim]);

  const put = await scim.send('PUT', `Groups/${staff}`, {
    schemas: [GROUP],
    displayName: 'vpn staff',
    members: [{ value: kim }],
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body?.['displayName'], 'vpn staff');

  const patch = await scim.send(
    'PATCH',
    `Groups/${staff}`,
    patchOp({ op: 'replace', path: 'displayName', value: 'VPN STAFF' }),
  );
  assert.equal(patch.status, 200, JSON.stringify(patch.body));
  assert.equal(patch.body?.['displayName'], 'VPN STAFF');
  assert.deepEqual(await named('Vpn Staff'), ['VPN STAFF']);
});

test('of two POSTs at once of one displayName in two letter cases, one makes the group and the other answers 409', async (t) => {
  const { scim, named, allNames } = await directoryFor(t);
  const answers = await Promise.all(
    ['Staff', 'staff'].map((displayName) => scim.send('POST', 'Groups', { schemas: [GROUP], displayName })),
  );
  assert.deepEqual(
    answers.map((answer) => answer.status).sort(),
    [201, 409],
    JSON.stringify(answers.map((answer) => answer.body)),
  );
  assert.equal(answers.find((answer) => answer.status === 409)?.body?.['scimType'], 'uniqueness');
  assert.equal((await named('STAFF')).length, 1);
  assert.equal((await allNames()).length, 1, 'exactly one group');
});

test('groups whose names differ only in case, made before, stay readable and editable; another of that name is refused', async (t) => {
  const { portal, scim, userId, named } = await directoryFor(t);
  const kim = await userId('kim@example.org');
  const upper = await seedScimGroup(portal, 'Staff', []);
  const lower = await seedScimGroup(portal, 'staff', []);
  assert.deepEqual(await named('STAFF'), ['Staff', 'staff'], 'a filter answers both, as before');

  const read = await scim.send('GET', `Groups/${lower}`);
  assert.equal(read.status, 200, JSON.stringify(read.body));
  // Entra ID sends the name it has with each change: the group's own name is its own.
  const put = await scim.send('PUT', `Groups/${lower}`, {
    schemas: [GROUP],
    displayName: 'staff',
    members: [{ value: kim }],
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const patch = await scim.send(
    'PATCH',
    `Groups/${upper}`,
    patchOp(
      { op: 'replace', path: 'displayName', value: 'Staff' },
      { op: 'add', path: 'members', value: [{ value: kim }] },
    ),
  );
  assert.equal(patch.status, 200, JSON.stringify(patch.body));
  assert.deepEqual(await storedMembers(portal, upper), [kim]);
  assert.deepEqual(await storedMembers(portal, lower), [kim]);

  // Renamed to its own name in yet another case: renamed. To its twin's exact name: refused.
  const renamed = await scim.send(
    'PATCH',
    `Groups/${upper}`,
    patchOp({ op: 'replace', path: 'displayName', value: 'STAFF' }),
  );
  assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
  assertTaken(
    await scim.send('PATCH', `Groups/${upper}`, patchOp({ op: 'replace', path: 'displayName', value: 'staff' })),
    'a Group with displayName "staff" exists already',
  );
  // A POST of the name in a third case names the twin that holds it exactly, or the first.
  assertTaken(
    await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'staff' }),
    'a Group with displayName "staff" exists already',
  );
  assertTaken(
    await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'Staff' }),
    'a Group with displayName "STAFF" exists already ("Staff" differs from it only in letter case)',
  );
  assert.deepEqual(await named('staff'), ['STAFF', 'staff']);

  const deleted = await scim.send('DELETE', `Groups/${lower}`);
  assert.equal(deleted.status, 204);
  assert.deepEqual(await named('staff'), ['STAFF']);
});
