// Migration 0043 on the data before it: every user destroyed here that the database still tells
// of (a destroy receipt naming it, or an import's note of a user not here any more) is kept by
// the digest of its id, so that the eduVPN import never brings it back. Runs on SQLite and, in
// the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asUserId } from '../../src/shared/ids.js';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { destroyedUserDigest } from '../../src/storage/destroyed-user-digest.js';
import { destroyedUsersAmong } from '../../src/storage/destroyed-users.js';
import { noteImportedRecords } from '../../src/storage/imported-records.js';
import { insertRevocation } from '../../src/storage/revocations.js';
import { insertImportedUsers } from '../../src/storage/users.js';
import { migrationTestLocation } from '../support/postgres.js';

const IMPORTED_AT = '2026-01-10T12:00:00+00:00';

test('0043 keeps each user destroyed before it by the digest of its id, from its latest receipt or, its receipt pruned, its import’s note', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'destroyed-users'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0042-unlinked-kept-answers');
  // alice was destroyed twice; bob was made again after his destroy; carol was brought by an
  // import and destroyed a year ago, her receipt pruned; dave was only disabled; erin is here.
  const destroy = (revocationId: string, userId: string, requestedAt: string) =>
    insertRevocation(db, { revocationId, userId: asUserId(userId), reason: 'destroy', requestedAt });
  await destroy('r1', 'alice', '2026-03-01T08:00:00+00:00');
  await destroy('r2', 'alice', '2026-05-01T08:00:00+00:00');
  await destroy('r3', 'bob', '2026-04-01T08:00:00+00:00');
  await insertRevocation(db, {
    revocationId: 'r4',
    userId: asUserId('dave'),
    reason: 'disable_user',
    requestedAt: '2026-04-02T08:00:00+00:00',
  });
  const user = (userId: string) => ({
    userId: asUserId(userId),
    createdAt: IMPORTED_AT,
    lastSeen: IMPORTED_AT,
    permissionList: '[]',
    authData: null,
    isDisabled: false,
  });
  await db.transaction().execute((trx) => insertImportedUsers(trx, [user('bob'), user('dave'), user('erin')]));
  await noteImportedRecords(
    db,
    ['carol', 'erin'].map((recordId) => ({ kind: 'user', recordId, importedAt: IMPORTED_AT, expiresAt: null })),
  );

  const before = new Date().toISOString().slice(0, 19);
  await migrateToLatest(db);
  const ids = ['alice', 'bob', 'carol', 'dave', 'erin'].map(asUserId);
  const kept = await destroyedUsersAmong(db, ids);
  assert.deepEqual([...kept.keys()].sort(), ['alice', 'bob', 'carol']);
  assert.equal(kept.get(asUserId('alice')), '2026-05-01T08:00:00+00:00', 'the latest destroy');
  assert.equal(kept.get(asUserId('bob')), '2026-04-01T08:00:00+00:00', 'made again since, still destroyed then');
  assert.ok(
    (kept.get(asUserId('carol')) ?? '') >= before,
    'its receipt gone: destroyed by the migration at the latest',
  );
  const rows = await db.selectFrom('destroyed_users').select('user_digest').execute();
  assert.deepEqual(
    rows.map((row) => row.user_digest).sort(),
    ['alice', 'bob', 'carol'].map(destroyedUserDigest).sort(),
    'no row names a user, only its digest',
  );
});
