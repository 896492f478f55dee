// What the SCIM surface answers about groups and takes from them, beyond a provisioning cycle:
// `attributes` and `excludedAttributes`, the bound on the members of a list answer, two
// PATCHes of one group at once each applied to what the other left, NUL characters refused
// with 400 wherever a request could carry them, and large bodies taking turns (503 with
// Retry-After for one that waits too long).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { test } from 'node:test';
import { MAX_LISTED_MEMBERS } from '../../../src/protocol/scim.js';
import { SCIM_RETRY_AFTER_SECONDS } from '../../../src/http/scim/surface.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import {
  patchOp,
  resourcesOf,
  scimClient,
  seedScimGroup,
  seedScimUsers,
  storedMembers,
} from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const config = { scim: { allowList: ['127.0.0.0/8'] } };

test('attributes and excludedAttributes choose what a group answer holds; a list answer holds members up to its bound, a group past it listed without them', async (t) => {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const ids = await seedScimUsers(portal, MAX_LISTED_MEMBERS + 3);
  const big = await seedScimGroup(portal, 'A big one', ids.slice(0, MAX_LISTED_MEMBERS - 2));
  await seedScimGroup(portal, 'B small', ids.slice(MAX_LISTED_MEMBERS - 2, MAX_LISTED_MEMBERS + 1));
  await seedScimGroup(portal, 'C small', ids.slice(MAX_LISTED_MEMBERS + 1));

  const sizes = (answer: Awaited<ReturnType<typeof scim.send>>) =>
    resourcesOf<Record<string, unknown>>(answer).map((group) => [
      group['displayName'],
      (group['members'] as unknown[] | undefined)?.length ?? null,
    ]);
  // 9,998 + 3 would pass 10,000: the second group is listed without members, the third (2) fits.
  assert.deepEqual(sizes(await scim.send('GET', 'Groups')), [
    ['A big one', MAX_LISTED_MEMBERS - 2],
    ['B small', null],
    ['C small', 2],
  ]);
  assert.deepEqual(sizes(await scim.send('GET', 'Groups?excludedAttributes=members')), [
    ['A big one', null],
    ['B small', null],
    ['C small', null],
  ]);
  const filtered = await scim.send(
    'GET',
    `Groups?filter=${encodeURIComponent('displayName eq "B small"')}&excludedAttributes=urn:ietf:params:scim:schemas:core:2.0:Group:members`,
  );
  assert.deepEqual(sizes(filtered), [['B small', null]]);

  const only = await scim.send('GET', `Groups/${big}?attributes=displayName`);
  assert.deepEqual(Object.keys(only.body ?? {}).sort(), ['displayName', 'id', 'meta', 'schemas']);
  const withoutMembers = await scim.send('GET', `Groups/${big}?excludedAttributes=Members.value`);
  assert.deepEqual(Object.keys(withoutMembers.body ?? {}).sort(), ['displayName', 'id', 'meta', 'schemas']);
  const whole = await scim.send('GET', `Groups/${big}`);
  const wholeMembers = (whole.body?.['members'] ?? []) as unknown[];
  assert.equal(wholeMembers.length, MAX_LISTED_MEMBERS - 2);
  assert.deepEqual(wholeMembers[0], { value: ids[0], display: 'member-0', type: 'User' });
  const patched = await scim.send(
    'PATCH',
    `Groups/${big}?excludedAttributes=members`,
    patchOp({ op: 'add', path: 'members', value: [{ value: ids.at(-1) }] }),
  );
  assert.equal(patched.status, 200);
  assert.equal(patched.body?.['members'], undefined);
  const both = await scim.send('GET', `Groups/${big}?attributes=members&excludedAttributes=members`);
  assert.equal(both.status, 400);
});

test('two PATCHes of one group at once, one removing a member and one adding another, both hold: the removed member is never put back', async (t) => {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const ids = await seedScimUsers(portal, 400);
  const [kept = '', leaving = ''] = ids;
  // Some members, so that reading and writing the group takes a while and the two overlap.
  const others = ids.slice(2, 302);
  for (let round = 0; round < 10; round += 1) {
    const groupId = await seedScimGroup(portal, `Staff ${round}`, [kept, leaving, ...others]);
    const joining = ids[302 + round] ?? '';
    const [removed, added] = await Promise.all([
      scim.send('PATCH', `Groups/${groupId}`, patchOp({ op: 'remove', path: `members[value eq "${leaving}"]` })),
      scim.send('PATCH', `Groups/${groupId}`, patchOp({ op: 'add', path: 'members', value: [{ value: joining }] })),
    ]);
    assert.equal(removed.status, 200, JSON.stringify(removed.body).slice(0, 200));
    assert.equal(added.status, 200, JSON.stringify(added.body).slice(0, 200));
    const stored = await storedMembers(portal, groupId);
    assert.ok(!stored.includes(leaving), `round ${round}: the removed member stays removed`);
    assert.ok(stored.includes(joining) && stored.includes(kept), `round ${round}: the added member is in`);
    assert.equal(stored.length, 302);
  }
});

test('a NUL character in a filter value, a body or a resource id is refused with 400 (404 for the id) and changes nothing', async (t) => {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const [member = ''] = await seedScimUsers(portal, 1);
  const group = await scim.send('POST', 'Groups', { displayName: 'Staff', members: [{ value: member }] });
  const groupId = String(group.body?.['id']);
  const before = await portal.portal.ctx.db.selectFrom('scim_groups').selectAll().execute();

  for (const filter of ['userName eq "a\\u0000b"', 'externalId eq "\\u0000"']) {
    const answer = await scim.send('GET', `Users?filter=${encodeURIComponent(filter)}`);
    assert.equal(answer.status, 400, filter);
    assert.equal(answer.body?.['scimType'], 'invalidFilter', filter);
  }
  const nul = '\u0000';
  for (const [method, target, body] of [
    ['POST', 'Groups', { displayName: `Sta${nul}ff` }],
    ['POST', 'Groups', { displayName: 'Other', externalId: `x${nul}` }],
    ['POST', 'Groups', { displayName: 'Other', members: [{ value: `${member}${nul}` }] }],
    ['POST', 'Users', { userName: 'erin', externalId: `e${nul}` }],
    ['POST', 'Users', { userName: 'erin', name: { givenName: `E${nul}` } }],
    ['PUT', `Groups/${groupId}`, { displayName: `Sta${nul}ff` }],
    ['PATCH', `Groups/${groupId}`, patchOp({ op: 'add', path: 'members', value: [{ value: nul }] })],
    ['PATCH', `Groups/${groupId}`, patchOp({ op: 'replace', path: 'externalId', value: nul })],
  ] as const) {
    const answer = await scim.send(method, target, body);
    assert.equal(answer.status, 400, `${method} ${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body?.['scimType'], 'invalidValue');
  }
  assert.equal((await scim.send('GET', 'Groups/a%00b')).status, 404);
  assert.equal((await scim.send('GET', 'Users/a%00b')).status, 404);
  assert.deepEqual(await portal.portal.ctx.db.selectFrom('scim_groups').selectAll().execute(), before);
  assert.deepEqual(await portal.portal.ctx.db.selectFrom('scim_users').select('user_id').execute(), [
    { user_id: 'member-0' },
  ]);
});

test('a lone surrogate in a body is refused with 400 and changes nothing, rather than stored as another user id on each database', async (t) => {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const [member = ''] = await seedScimUsers(portal, 1);
  const group = await scim.send('POST', 'Groups', { displayName: 'Staff', members: [{ value: member }] });
  const groupId = String(group.body?.['id']);
  const before = await portal.portal.ctx.db.selectFrom('scim_groups').selectAll().execute();

  // JSON.stringify writes a lone surrogate as the escape `\ud800`, as a directory's client might.
  for (const [method, target, body] of [
    ['POST', 'Users', { userName: 'erin\uD800' }],
    ['POST', 'Users', { userName: 'erin', externalId: '\uDC00' }],
    ['POST', 'Groups', { displayName: 'Sta\uD83Dff' }],
    ['PATCH', `Groups/${groupId}`, patchOp({ op: 'replace', path: 'displayName', value: '\uDE42' })],
  ] as const) {
    const answer = await scim.send(method, target, body);
    assert.equal(answer.status, 400, `${method} ${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body?.['scimType'], 'invalidValue');
    assert.match(String(answer.body?.['detail']), /lone surrogate/);
  }
  assert.deepEqual(await portal.portal.ctx.db.selectFrom('scim_groups').selectAll().execute(), before);
  assert.deepEqual(await portal.portal.ctx.db.selectFrom('scim_users').select('user_id').execute(), [
    { user_id: 'member-0' },
  ]);
  assert.deepEqual((await portal.get('/users')).json(), { users: ['member-0'] });
});

test('large bodies take turns: one waiting too long for a large body still arriving gets 503 with Retry-After, a small one is answered meanwhile', async (t) => {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  const key = await makeAdminKey(portal, 'entra', { scope: 'scim' });
  const scim = scimClient(portal, key);
  const url = new URL(scim.base);
  // Large by the spaces between its members (JSON allows them): a group of 100 KB.
  const large = (displayName: string) => `{"displayName":${JSON.stringify(displayName)}${' '.repeat(100_000)}}`;
  const body = large('Slow');

  // A client sends a large body's first half, and the rest only later.
  const slow = connect({ host: url.hostname, port: Number(url.port) });
  await once(slow, 'connect');
  const received: Buffer[] = [];
  slow.on('data', (chunk: Buffer) => received.push(chunk));
  slow.write(
    `POST ${url.pathname}Groups HTTP/1.1\r\nHost: portal\r\nAuthorization: Bearer ${key}\r\n` +
      `Content-Type: application/scim+json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 50_000)}`,
  );
  await new Promise((resolve) => setTimeout(resolve, 300));

  const small = await scim.send('POST', 'Groups', { displayName: 'Small' });
  assert.equal(small.status, 201);
  const waiting = await scim.send('POST', 'Groups', large('Waiting'));
  assert.equal(waiting.status, 503, JSON.stringify(waiting.body));
  assert.equal(waiting.headers.get('retry-after'), String(SCIM_RETRY_AFTER_SECONDS));
  assert.equal(waiting.body?.['status'], '503');

  slow.write(body.slice(50_000));
  const answered = once(slow, 'data');
  await answered;
  slow.destroy();
  assert.match(Buffer.concat(received).toString('utf8'), /^HTTP\/1\.1 201 /);
  // The slot is free again.
  const after = await scim.send('POST', 'Groups', large('After'));
  assert.equal(after.status, 201);
});
