// Filters a directory's key may send in a PATCH path that scimmy cannot be trusted with: groups it
// multiplies out (seven "(a or b)" groups beside twenty comparisons filled a 4 GB heap), an unclosed
// string of backslashes its lexer backtracks over for hours, a `not` over several comparisons
// (which scimmy reads as a `not` before each, selecting other members than the filter says) and a
// dangling `and`. Each is refused with a 400 that changes nothing, and the portal answers the
// next request at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { patchOp, scimClient, storedMembers } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const orGroups = (count: number, attribute: string) =>
  Array.from({ length: count }, (_, index) => `(${attribute} eq "a${index}" or ${attribute} eq "b${index}")`).join(
    ' and ',
  );
const comparisons = (count: number) => Array.from({ length: count }, (_, index) => `type eq "c${index}"`).join(' and ');

test('PATCH paths that would hold the portal for hours or fill its heap are refused at once, and the directory goes on being answered', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const created = await scim.send('POST', 'Users', {
    userName: 'ann',
    emails: [{ value: 'ann@example.org', type: 'work' }],
  });
  const userId = String(created.body?.['id']);

  const heapFilling = `emails[${orGroups(7, 'type')} and ${comparisons(20)}]`;
  const backtracking = `emails[type eq "${'\\'.repeat(40)}`;
  for (const operation of [
    { op: 'remove', path: heapFilling },
    { op: 'remove', path: backtracking },
    { op: 'add', value: { [`${heapFilling}.display`]: 'x' } },
  ]) {
    const answer = await scim.send('PATCH', `Users/${userId}`, patchOp(operation));
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.equal(answer.body?.['scimType'], 'invalidFilter');
  }

  const many = await scim.send(
    'PATCH',
    `Users/${userId}`,
    patchOp(...Array.from({ length: 4 }, () => ({ op: 'remove', path: `emails[${comparisons(55)}]` }))),
  );
  assert.equal(many.status, 400, 'scimmy takes time growing with the square of comparisons: a request holds 200');
  assert.equal(many.body?.['scimType'], 'tooMany');

  const listed = await scim.send('GET', `Users?filter=${encodeURIComponent(orGroups(24, 'userName'))}`);
  assert.equal(listed.status, 400, 'a list filter is read by the portal, which takes one equality only');
  assert.equal(listed.body?.['scimType'], 'invalidFilter');

  const read = await scim.send('GET', `Users/${userId}`);
  assert.equal(read.status, 200);
  assert.deepEqual(
    read.body?.['emails'],
    [{ value: 'ann@example.org', type: 'work' }],
    'the refused PATCHes changed nothing',
  );
});

test('a member removal by "not" over two comparisons, or by a filter ending in "and", is refused and the group keeps its members', async (t) => {
  const portal = await startTestPortal({
    config: { ...twoProfiles, scim: { groupProfiles: { 'VPN Guests': ['guests'] } } },
  });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const ids: Record<string, string> = {};
  for (const userName of ['ann', 'ben', 'cid'])
    ids[userName] = String((await scim.send('POST', 'Users', { userName })).body?.['id']);
  const group = await scim.send('POST', 'Groups', {
    displayName: 'VPN Guests',
    members: Object.values(ids).map((value) => ({ value })),
  });
  const groupId = String(group.body?.['id']);
  const everyone = Object.values(ids).sort();

  // "Remove everyone but ann and ben": scimmy read it as "not ann or not ben", which is everyone.
  // "Remove whoever is not both ann and ben" (everyone): scimmy read it as neither, which left them in.
  for (const filter of [
    `not (value eq "${ids['ann']}" or value eq "${ids['ben']}")`,
    `not (value eq "${ids['ann']}" and value eq "${ids['ben']}")`,
    `value eq "${ids['cid']}" and`,
  ]) {
    const answer = await scim.send('PATCH', `Groups/${groupId}`, patchOp({ op: 'remove', path: `members[${filter}]` }));
    assert.equal(answer.status, 400, `${filter}: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body?.['scimType'], 'invalidFilter');
    assert.deepEqual(await storedMembers(portal, groupId), everyone, `${filter} removed nobody`);
  }

  const meant = await scim.send(
    'PATCH',
    `Groups/${groupId}`,
    patchOp({ op: 'remove', path: `members[not (value eq "${ids['ann']}") and not (value eq "${ids['ben']}")]` }),
  );
  assert.equal(meant.status, 200, 'the same removal written with a not before each comparison is applied');
  assert.deepEqual(await storedMembers(portal, groupId), [ids['ann'], ids['ben']].sort(), 'cid is out of the group');
});
