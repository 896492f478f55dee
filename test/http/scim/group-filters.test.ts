// How a directory looks a group up before it changes it: by displayName, compared without regard
// to case (RFC 7643: a Group's displayName is not case-exact), and by a membership check,
// `id eq "…" and members eq "…"` (as clients such as ssosync send it; others write the member
// `members.value eq "…"` or `members[value eq "…"]`, Entra ID among them by other SCIM servers'
// account): the group if the user is in it, an empty
// list otherwise. Refused with 400, the directory could not check and failed its sync; found by
// the exact name alone, a directory whose group is written in another case here made a second one.
// A directory also asks which groups a user is in, by `members eq "…"` alone: the user's groups,
// paged as any Group list.
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { scimClient, seedScimGroup } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';

/** A portal with a directory's SCIM key, and a way to make its users (their SCIM ids). */
async function directoryFor(t: TestContext) {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'directory', { scope: 'scim' }));
  const userId = async (userName: string): Promise<string> => {
    const made = await scim.send('POST', 'Users', { schemas: [USER], userName });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return String(made.body?.['id']);
  };
  return { portal, scim, userId };
}

test('a directory checks whether a user is in a group by id and members, in each spelling, and gets the group or an empty list', async (t) => {
  const { scim, userId } = await directoryFor(t);
  const kim = await userId('kim@example.org');
  const lou = await userId('lou@example.org');
  const made = await scim.send('POST', 'Groups', {
    schemas: [GROUP],
    displayName: 'VPN Staff',
    members: [{ value: kim }],
  });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const group = String(made.body?.['id']);
  const other = await scim.send('POST', 'Groups', {
    schemas: [GROUP],
    displayName: 'VPN Guests',
    members: [{ value: lou }],
  });
  assert.equal(other.status, 201, JSON.stringify(other.body));

  const found = async (filter: string): Promise<string[]> => {
    const answer = await scim.send('GET', `Groups?excludedAttributes=members&filter=${encodeURIComponent(filter)}`);
    assert.equal(answer.status, 200, `${filter}: ${JSON.stringify(answer.body)}`);
    const resources = (answer.body?.['Resources'] ?? []) as { id: string; members?: unknown }[];
    assert.equal(answer.body?.['totalResults'], resources.length);
    assert.ok(
      resources.every((resource) => resource.members === undefined),
      'members left out as asked',
    );
    return resources.map((resource) => resource.id);
  };
  for (const [member, spelling] of [
    (id: string) => `members eq "${id}"`,
    (id: string) => `members.value eq "${id}"`,
    (id: string) => `members[value eq "${id}"]`,
    (id: string) => `${GROUP}:Members[Value EQ "${id}"]`,
  ].entries()) {
    assert.deepEqual(await found(`id eq "${group}" and ${spelling(kim)}`), [group], `spelling ${member}: kim is in`);
    assert.deepEqual(await found(`${spelling(kim)} AND id eq "${group}"`), [group], `spelling ${member}, member first`);
    assert.deepEqual(await found(`id eq "${group}" and ${spelling(lou)}`), [], `spelling ${member}: lou is not`);
  }
  assert.deepEqual(await found(`id eq "no-such-group" and members eq "${kim}"`), []);

  // Lou joins; the check then finds the group, with its members when asked.
  const joined = await scim.send('PATCH', `Groups/${group}`, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    Operations: [{ op: 'add', path: 'members', value: [{ value: lou }] }],
  });
  assert.equal(joined.status, 200, JSON.stringify(joined.body));
  const whole = await scim.send(
    'GET',
    `Groups?filter=${encodeURIComponent(`id eq "${group}" and members eq "${lou}"`)}`,
  );
  assert.equal(whole.status, 200, JSON.stringify(whole.body));
  const resources = whole.body?.['Resources'] as { members: { value: string }[] }[];
  assert.deepEqual(
    resources.map((resource) => resource.members.map((entry) => entry.value).sort()),
    [[kim, lou].sort()],
  );

  // What is not a membership check is still refused, saying what is read.
  for (const filter of [
    `id eq "${group}" or members eq "${kim}"`,
    `id eq "${group}" and members eq "${kim}" and members eq "${lou}"`,
    `members eq "${kim}" or members eq "${lou}"`,
    `members ne "${kim}"`,
    `displayName eq "VPN Staff" and members eq "${kim}"`,
    `id eq "${group}" and members[display eq "kim@example.org"]`,
  ]) {
    const refused = await scim.send('GET', `Groups?filter=${encodeURIComponent(filter)}`);
    assert.equal(refused.status, 400, filter);
    assert.equal(refused.body?.['scimType'], 'invalidFilter', filter);
    assert.match(String(refused.body?.['detail']), /id eq "…" and members eq "…"/, filter);
  }
});

test('a directory asks which groups a user is in by members alone, in each spelling, and reads them page by page', async (t) => {
  const { scim, userId } = await directoryFor(t);
  const kim = await userId('kim@example.org');
  const lou = await userId('lou@example.org');
  const max = await userId('max@example.org');
  const groupOf = async (displayName: string, members: string[]): Promise<string> => {
    const made = await scim.send('POST', 'Groups', {
      schemas: [GROUP],
      displayName,
      members: members.map((value) => ({ value })),
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return String(made.body?.['id']);
  };
  const staff = await groupOf('VPN Staff', [kim]);
  await groupOf('VPN Guests', [lou]);
  const admins = await groupOf('Admins', [kim, lou]);
  const engineers = await groupOf('Engineers', [kim]);

  const listed = async (filter: string, page = '') => {
    const answer = await scim.send('GET', `Groups?filter=${encodeURIComponent(filter)}${page}`);
    assert.equal(answer.status, 200, `${filter}: ${JSON.stringify(answer.body)}`);
    const resources = (answer.body?.['Resources'] ?? []) as { id: string; members?: { value: string }[] }[];
    return { total: answer.body?.['totalResults'], resources, ids: resources.map((resource) => resource.id) };
  };
  for (const spelling of [
    (id: string) => `members eq "${id}"`,
    (id: string) => `members.value eq "${id}"`,
    (id: string) => `members[value eq "${id}"]`,
    (id: string) => `${GROUP}:Members[Value EQ "${id}"]`,
    (id: string) => `MEMBERS.Value eq "${id}"`,
  ]) {
    const kims = await listed(spelling(kim));
    assert.deepEqual(kims.ids, [admins, engineers, staff], `${spelling(kim)}: kim's groups in displayName order`);
    assert.equal(kims.total, 3);
  }
  // Each group with its members, as any list answers them.
  const withMembers = (await listed(`members eq "${lou}"`)).resources;
  assert.deepEqual(
    withMembers.map((resource) => resource.members?.map((member) => member.value).sort()),
    [[kim, lou].sort(), [lou]],
  );
  // Paged as other Group lists: two at a time, and the total of all.
  const first = await listed(`members eq "${kim}"`, '&count=2');
  assert.deepEqual([first.ids, first.total], [[admins, engineers], 3]);
  const second = await listed(`members eq "${kim}"`, '&startIndex=3&count=2');
  assert.deepEqual([second.ids, second.total], [[staff], 3]);
  // A user in no group, and an id of no user, are in none.
  assert.deepEqual(await listed(`members eq "${max}"`), { total: 0, resources: [], ids: [] });
  assert.deepEqual((await listed('members eq "no-such-user"')).ids, []);
});

test('a directory finds its group by displayName in another case, and every group of that name in any case', async (t) => {
  const { portal, scim } = await directoryFor(t);
  const made = await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'VPN Staff' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const accented = await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'Équipe VPN' });
  assert.equal(accented.status, 201, JSON.stringify(accented.body));
  await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'VPN Staff EU' });

  const found = async (displayName: string): Promise<string[]> => {
    const filter = `displayName eq ${JSON.stringify(displayName)}`;
    const answer = await scim.send('GET', `Groups?filter=${encodeURIComponent(filter)}`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const resources = (answer.body?.['Resources'] ?? []) as { displayName: string }[];
    assert.equal(answer.body?.['totalResults'], resources.length);
    return resources.map((resource) => resource.displayName);
  };
  assert.deepEqual(await found('vpn staff'), ['VPN Staff']);
  assert.deepEqual(await found('VPN STAFF'), ['VPN Staff']);
  assert.deepEqual(await found('équipe vpn'), ['Équipe VPN'], 'lower-cased as Unicode has it, on both databases');
  assert.deepEqual(await found('VPN Staf'), []);

  // Two groups of one name in two cases (made before the portal refused the second:
  // group-name-case.test.ts) are both found, and paged as any list.
  await seedScimGroup(portal, 'vpn staff', []);
  assert.deepEqual(await found('Vpn Staff'), ['VPN Staff', 'vpn staff']);
  const page = await scim.send(
    'GET',
    `Groups?count=1&startIndex=2&filter=${encodeURIComponent('displayName eq "VPN staff"')}`,
  );
  assert.deepEqual(
    [
      page.body?.['totalResults'],
      ((page.body?.['Resources'] ?? []) as { displayName: string }[]).map((one) => one.displayName),
    ],
    [2, ['vpn staff']],
  );
});
