// The directory says "active" and then, at once, "inactive" for a user it had disabled: the user
// ends disabled and its configurations off the node. The enable must happen under the
// directory's row lock, in the PATCH's own transaction: run after that commit, it came after the
// second PATCH had found the user still disabled (and so changed nothing), and put the user back.
// The first PATCH is held between its commit and what follows it, so the race happens every time.
// PostgreSQL only: the held statement keeps its connection, and SQLite has one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { patchDirectoryUser } from '../../../src/core/directory/index.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { startRevisionNode } from '../../support/revision-node.js';
import { patchOp, scimClient } from '../../support/scim-client.js';
import { startPortalOnStandIn } from '../../support/stand-in-node.js';

test('a user the directory calls active and then inactive at once ends disabled, its peers off the node', async (t) => {
  const node = await startRevisionNode(t);
  const portal = await startPortalOnStandIn(t, node.url, {
    config: { reconcileInterval: 'PT1H' },
  });
  await portal.reconcile();
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'bob',
    active: true,
  });
  const id = String(made.body?.['id']);
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  const [key] = node.peers.keys();
  assert.ok(key !== undefined, 'the configuration is on the node');
  // The directory disables bob: his peer leaves the node.
  const off = () => scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', path: 'active', value: false }));
  assert.equal((await off()).status, 200);
  assert.ok(!node.peers.has(key));

  // "active": held at the first read of the directory's row after its transaction (the second read).
  let plainReads = 0;
  const hold = new HoldStatement(
    (operation, text) =>
      operation.kind === 'SelectQueryNode' &&
      text.includes('"scim_users"') &&
      !text.includes('ForUpdate') &&
      ++plainReads === 2,
  );
  const ctx = portal.portal.ctx;
  const active = patchDirectoryUser({ ...ctx, db: ctx.db.withPlugin(hold) }, id, async (current) => ({
    userName: current.userName,
    externalId: current.externalId,
    attributes: current.attributes,
    active: true,
  }));
  await hold.reached;
  // "inactive", sent right after, answers in full meanwhile.
  const inactive = await off();
  assert.equal(inactive.status, 200, JSON.stringify(inactive.body));
  hold.release();
  await active;

  assert.deepEqual(await portal.admin.disabledUsers(), ['bob'], 'the last word of the directory holds');
  assert.equal((await scim.send('GET', `Users/${id}`)).body?.['active'], false);
  assert.ok(
    !node.peers.has(key),
    `the peer is on the node again: ${JSON.stringify(node.log.filter((entry) => entry.key === key))}`,
  );
});

test('an administrator enabling a user while the directory calls the person inactive leaves the user disabled', async (t) => {
  const node = await startRevisionNode(t);
  const portal = await startPortalOnStandIn(t, node.url, { config: { reconcileInterval: 'PT1H' } });
  await portal.reconcile();
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'carol',
    active: true,
  });
  const id = String(made.body?.['id']);
  assert.equal((await portal.post('/create', { user_id: 'carol', profile_id: 'employees' })).status, 200);
  const [key] = node.peers.keys();
  assert.ok(key !== undefined, 'the configuration is on the node');
  // An incident: an administrator disables carol, whom the directory still calls active.
  assert.equal((await portal.post('/disable_user', { user_id: 'carol' })).status, 204);

  // Carol leaves: the directory's "inactive" is held once it has found her disabled already
  // (its disable changed no row), before it commits.
  let disableTried = false;
  const hold = new HoldStatement((operation, text) => {
    if (operation.kind === 'UpdateQueryNode' && text.includes('"is_disabled"')) disableTried = true;
    return disableTried && operation.kind === 'SelectQueryNode';
  });
  const ctx = portal.portal.ctx;
  const inactive = patchDirectoryUser({ ...ctx, db: ctx.db.withPlugin(hold) }, id, async (current) => ({
    userName: current.userName,
    externalId: current.externalId,
    attributes: current.attributes,
    active: false,
  }));
  await hold.reached;
  // Meanwhile the incident ends and the administrator enables carol.
  const enable = portal.post('/enable_user', { user_id: 'carol' });
  const answeredWhileHeld = await Promise.race([
    enable.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 1000)),
  ]);
  hold.release();
  await inactive;

  assert.equal(answeredWhileHeld, false, 'the enable waits for the directory’s change to commit');
  assert.equal((await enable).status, 409, (await enable).text);
  assert.deepEqual(await portal.admin.disabledUsers(), ['carol'], 'the person who left stays out');
  assert.ok(!node.peers.has(key), 'carol’s peer stays off the node');
});
