// A directory's large groups through the SCIM surface, on either database: a group of 50,000
// members is created, read, patched and replaced (more bound values than SQLite or PostgreSQL
// takes in one statement, and a body far above the listener's 64 KiB), and the bounds beyond it
// (100,000 members, a body over 12 MiB) are refused in SCIM's format, changing nothing, as are
// unknown members (a few of them named).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { patchOp, scimClient, seedScimUsers, storedMembers } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

function memberValues(body: Record<string, unknown> | null): string[] {
  return ((body?.['members'] ?? []) as { value: string }[]).map((member) => member.value);
}

test('a group of 50,000 members is created, read, patched, replaced and deleted', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const ids = await seedScimUsers(portal, 50_002);
  const first = ids.slice(0, 50_000);
  const sorted = (list: readonly string[]) => [...list].sort();

  // Okta's form: each member with its display name and type, about 4 MB in all.
  const members = first.map((value, index) => ({ value, display: `member-${index}@example.org`, type: 'User' }));
  const created = await scim.send('POST', 'Groups', { displayName: 'All staff', members });
  assert.equal(created.status, 201, JSON.stringify(created.body).slice(0, 300));
  const groupId = String(created.body?.['id']);
  assert.equal(memberValues(created.body).length, 50_000);
  assert.deepEqual(await storedMembers(portal, groupId), sorted(first));

  const read = await scim.send('GET', `Groups/${groupId}`);
  assert.deepEqual(sorted(memberValues(read.body)), sorted(first));

  // Entra ID's forms: one member added, one removed by filter, URN-qualified.
  const patched = await scim.send(
    'PATCH',
    `Groups/${groupId}`,
    patchOp(
      { op: 'Add', path: 'members', value: [{ value: ids[50_000] }] },
      { op: 'Remove', path: `urn:ietf:params:scim:schemas:core:2.0:Group:members[value eq "${ids[0]}"]` },
    ),
  );
  assert.equal(patched.status, 200, JSON.stringify(patched.body).slice(0, 300));
  const afterPatch = [...first.slice(1), ids[50_000] ?? ''];
  assert.deepEqual(await storedMembers(portal, groupId), sorted(afterPatch));

  // All 50,000 replaced by PATCH: half of them leave, half of them stay, one comes in.
  const replacement = [...ids.slice(25_000, 50_000), ids[50_001] ?? ''];
  const replaced = await scim.send(
    'PATCH',
    `Groups/${groupId}`,
    patchOp({ op: 'Replace', path: 'members', value: replacement.map((value) => ({ value })) }),
  );
  assert.equal(replaced.status, 200, JSON.stringify(replaced.body).slice(0, 300));
  assert.deepEqual(await storedMembers(portal, groupId), sorted(replacement));

  const put = await scim.send('PUT', `Groups/${groupId}`, {
    displayName: 'All staff',
    members: ids.slice(2).map((value) => ({ value })),
  });
  assert.equal(put.status, 200, JSON.stringify(put.body).slice(0, 300));
  assert.equal((await storedMembers(portal, groupId)).length, 50_000);

  assert.equal((await scim.send('DELETE', `Groups/${groupId}`)).status, 204);
  assert.deepEqual(await storedMembers(portal, groupId), []);
});

test('more than 100,000 members, a body over 12 MiB or unknown members are refused in SCIM format and change nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const [member = ''] = await seedScimUsers(portal, 1);
  const group = await scim.send('POST', 'Groups', { displayName: 'Staff', members: [{ value: member }] });
  const groupId = String(group.body?.['id']);

  const tooMany = Array.from({ length: 100_001 }, (_, index) => ({ value: `m-${index}` }));
  for (const [method, path, body, held] of [
    ['POST', 'Groups', { displayName: 'Everyone', members: tooMany }, '100,001'],
    ['PATCH', `Groups/${groupId}`, patchOp({ op: 'add', path: 'members', value: tooMany }), '100,002'],
  ] as const) {
    const refused = await scim.send(method, path, body);
    assert.equal(refused.status, 400, method);
    assert.deepEqual(refused.body, {
      schemas: [ERROR_SCHEMA],
      status: '400',
      scimType: 'invalidValue',
      detail: `members: a group holds at most 100,000 members (this one would hold ${held})`,
    });
  }
  const ghosts = Array.from({ length: 20 }, (_, index) => `ghost-${index}`);
  const unknown = await scim.send('POST', 'Groups', {
    displayName: 'Ghosts',
    members: ghosts.map((value) => ({ value })),
  });
  assert.equal(unknown.status, 400);
  assert.equal(
    unknown.body?.['detail'],
    `members: no User with id ${ghosts
      .slice(0, 10)
      .map((id) => `"${id}"`)
      .join(', ')} and 10 more`,
  );
  const huge = await scim.send('POST', 'Groups', { displayName: 'x'.repeat(12 * 1024 * 1024) });
  assert.equal(huge.status, 413);
  assert.equal(huge.body?.['status'], '413');
  assert.deepEqual(await storedMembers(portal, groupId), [member]);
  assert.equal((await portal.portal.ctx.db.selectFrom('scim_groups').selectAll().execute()).length, 1);
});
