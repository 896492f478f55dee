// Two POSTs at once of one group's displayName in two letter cases (a directory's retry after the
// name's case changed, two portal instances): a displayName is one group's letter case aside,
// so only one group may come of them, and the other answers 409 uniqueness, as it would had it
// come later. The unique index compares names exactly, so only the lock a POST holds on the name,
// letter case aside, keeps both from finding no such group and both writing theirs. The first
// POST is held right after it looked for a group of that name, so the race happens every time;
// the second waits for it and is refused. PostgreSQL only: the held statement keeps its
// connection, and SQLite's write transactions run one at a time. A PATCH that renames another
// group to that name in another case takes the same lock, and waits as a second POST does.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { createDirectoryGroup } from '../../../src/core/directory/index.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { patchOp, resourcesOf, scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

test('of two POSTs at once of one displayName in two letter cases, one makes the group and the other waits for it and answers 409', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));

  const hold = new HoldStatement(
    (operation, text) => operation.kind === 'SelectQueryNode' && text.includes('"scim_groups"'),
  );
  const ctx = portal.portal.ctx;
  const first = createDirectoryGroup(
    { ...ctx, db: ctx.db.withPlugin(hold) },
    { displayName: 'Staff', externalId: null, memberIds: [] },
  );
  // Kept from an unhandled rejection while the second POST runs; judged below.
  const outcome = first.then(
    (group) => group,
    (error: unknown) => error,
  );
  const held = await Promise.race([hold.reached.then(() => true), outcome.then(() => false)]);
  assert.ok(held, 'the POST looked for a group of its name');
  let secondDone = false;
  const second = scim.send('POST', 'Groups', { displayName: 'staff' }).finally(() => {
    secondDone = true;
  });
  await sleep(500);
  const waited = !secondDone;
  hold.release();

  const made = await outcome;
  assert.ok(!(made instanceof Error), `the first POST makes the group, not: ${String(made)}`);
  const answer = await second;
  assert.equal(answer.status, 409, JSON.stringify(answer.body));
  assert.equal(answer.body?.['scimType'], 'uniqueness');
  assert.equal(
    answer.body?.['detail'],
    'a Group with displayName "Staff" exists already ("staff" differs from it only in letter case)',
  );
  assert.ok(waited, 'the second POST waited for the first');
  const groups = resourcesOf<{ displayName: string }>(await scim.send('GET', 'Groups'));
  assert.deepEqual(
    groups.map((group) => group.displayName),
    ['Staff'],
    'exactly one group',
  );
});

test('a PATCH that renames a group while a POST of that name in another case is under way waits for it and answers 409', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const admins = await scim.send('POST', 'Groups', { displayName: 'Admins' });
  assert.equal(admins.status, 201, JSON.stringify(admins.body));

  const hold = new HoldStatement(
    (operation, text) => operation.kind === 'SelectQueryNode' && text.includes('"scim_groups"'),
  );
  const ctx = portal.portal.ctx;
  const outcome = createDirectoryGroup(
    { ...ctx, db: ctx.db.withPlugin(hold) },
    { displayName: 'Staff', externalId: null, memberIds: [] },
  ).then(
    (group) => group,
    (error: unknown) => error,
  );
  const held = await Promise.race([hold.reached.then(() => true), outcome.then(() => false)]);
  assert.ok(held, 'the POST looked for a group of its name');
  let renameDone = false;
  const rename = scim
    .send(
      'PATCH',
      `Groups/${String(admins.body?.['id'])}`,
      patchOp({ op: 'replace', path: 'displayName', value: 'STAFF' }),
    )
    .finally(() => {
      renameDone = true;
    });
  await sleep(500);
  const waited = !renameDone;
  hold.release();

  const made = await outcome;
  assert.ok(!(made instanceof Error), `the POST makes the group, not: ${String(made)}`);
  const answer = await rename;
  assert.equal(answer.status, 409, JSON.stringify(answer.body));
  assert.equal(answer.body?.['scimType'], 'uniqueness');
  assert.ok(waited, 'the rename waited for the POST');
  const groups = resourcesOf<{ displayName: string }>(await scim.send('GET', 'Groups'));
  assert.deepEqual(groups.map((group) => group.displayName).sort(), ['Admins', 'Staff']);
});
