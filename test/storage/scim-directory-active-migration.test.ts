// Migration 0061 on the SCIM users before it: those the directory disabled itself are known to be
// inactive there, so an administrator's enable_user is refused for them at once after the upgrade;
// of the others (enabled, or disabled by an administrator) the directory's word is not known yet.
// Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { directoryCallsInactive } from '../../src/storage/scim-users.js';
import { asUserId } from '../../src/shared/ids.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0061 knows the users the directory disabled as inactive there, and of the others knows nothing yet', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, '0061'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0060-radius-outbox-address');
  const at = '2026-03-01T09:00:00+00:00';
  const users: [userId: string, disabledBy: string | null][] = [
    ['left', '(directory)'],
    ['incident', 'alice-admin'],
    ['working', null],
  ];
  for (const [userId, disabledBy] of users) {
    await db
      .insertInto('users')
      .values({
        user_id: userId,
        created_at: at,
        last_seen: at,
        is_disabled: disabledBy === null ? 0 : 1,
        disabled_by: disabledBy,
      })
      .execute();
    await db
      .insertInto('scim_users')
      .values({
        scim_id: `s-${userId}`,
        user_id: userId,
        user_name_key: userId,
        external_id: null,
        attributes: '{}',
        created_at: at,
        updated_at: at,
      })
      .execute();
  }

  await migrateToLatest(db);
  const rows = await db.selectFrom('scim_users').select(['user_id', 'directory_active']).orderBy('user_id').execute();
  assert.deepEqual(
    rows.map((row) => [row.user_id, row.directory_active]),
    [
      ['incident', null],
      ['left', 0],
      ['working', null],
    ],
  );
  assert.equal(await directoryCallsInactive(db, asUserId('left')), true);
  assert.equal(await directoryCallsInactive(db, asUserId('incident')), false);
});
