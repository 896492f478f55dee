// The users destroyed here, kept for good by a digest of the id (and one of the id letter case
// aside): found by the id one already has, with the time of the latest destroy, or letter case
// aside, while the table itself names nobody.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asUserId } from '../../src/shared/ids.js';
import { destroyedAnyCase, destroyedUsersAmong, noteDestroyedUser } from '../../src/storage/destroyed-users.js';
import { startTestPortal } from '../support/test-portal.js';

test('a destroyed user is found by its id with its latest destroy, and its row does not name it', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const alice = asUserId('alice@example.org');
  await noteDestroyedUser(db, alice, '2026-03-01T08:00:00+00:00');
  await noteDestroyedUser(db, alice, '2026-05-01T08:00:00+00:00');

  const found = await destroyedUsersAmong(db, [alice, asUserId('bob@example.org'), alice]);
  assert.deepEqual([...found], [[alice, '2026-05-01T08:00:00+00:00']]);
  const rows = await db.selectFrom('destroyed_users').selectAll().execute();
  assert.equal(rows.length, 1, 'one row however often destroyed');
  assert.ok(!JSON.stringify(rows).includes('alice'), 'the row holds a digest, not the id');
});

test('a destroyed user is known letter case aside, and only the same name in other letters is', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  await noteDestroyedUser(db, asUserId('Alice@Example.org'), '2026-03-01T08:00:00+00:00');

  for (const userId of ['Alice@Example.org', 'alice@example.org', 'ALICE@EXAMPLE.ORG'])
    assert.equal(await destroyedAnyCase(db, asUserId(userId)), true, userId);
  assert.equal(await destroyedAnyCase(db, asUserId('alice@example.com')), false);
  // The import asks by the exact id, as before.
  assert.deepEqual([...(await destroyedUsersAmong(db, [asUserId('alice@example.org')]))], []);
  const rows = await db.selectFrom('destroyed_users').selectAll().execute();
  assert.ok(!JSON.stringify(rows).toLowerCase().includes('alice'), 'the row holds digests, not the id');
});
