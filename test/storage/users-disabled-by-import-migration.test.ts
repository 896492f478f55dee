// Migration 0045 on the data before it: a user the eduVPN import brought disabled, and nobody
// here disabled since as far as the database tells, is marked as disabled by the import, so that
// the next import still brings what eduVPN issued it; any other disabled user stays disabled
// here. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asUserId } from '../../src/shared/ids.js';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { noteImportedRecords } from '../../src/storage/imported-records.js';
import { insertRevocation } from '../../src/storage/revocations.js';
import { migrationTestLocation } from '../support/postgres.js';

const AT = '2026-01-10T12:00:00+00:00';

test('0045 marks as disabled by the import only the users it brought disabled that no disable here names', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'users-disabled-by-import'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0044-withheld-imports');
  // vic came disabled from eduVPN; wes came enabled and was disabled here before migration 0036
  // (its receipt says so); xia was disabled here since 0036; yan was made and disabled here
  // before 0036, never imported; zoe came enabled and is enabled.
  const users: [string, number, string | null][] = [
    ['vic', 1, null],
    ['wes', 1, null],
    ['xia', 1, 'ops'],
    ['yan', 1, null],
    ['zoe', 0, null],
  ];
  await db
    .insertInto('users')
    .values(
      users.map(([userId, disabled, by]) => ({
        user_id: userId,
        created_at: AT,
        last_seen: AT,
        auth_data: null,
        is_disabled: disabled,
        disabled_by: by,
      })),
    )
    .execute();
  await noteImportedRecords(
    db,
    ['vic', 'wes', 'xia', 'zoe'].map((recordId) => ({ kind: 'user', recordId, importedAt: AT, expiresAt: null })),
  );
  await insertRevocation(db, {
    revocationId: 'r1',
    userId: asUserId('wes'),
    reason: 'disable_user',
    requestedAt: '2026-02-01T08:00:00+00:00',
  });

  await migrateToLatest(db);
  const rows = await db
    .selectFrom('users')
    .select(['user_id', 'is_disabled', 'disabled_by'])
    .orderBy('user_id')
    .execute();
  assert.deepEqual(
    rows.map((row) => [row.user_id, row.is_disabled, row.disabled_by]),
    [
      ['vic', 1, '(eduvpn import)'],
      ['wes', 1, null],
      ['xia', 1, 'ops'],
      ['yan', 1, null],
      ['zoe', 0, null],
    ],
  );
});
