// A migration that fails half-way (a full disk, a process killed during an upgrade) must leave
// the database as it was before it, so that the next start applies it whole: a schema change
// kept without the rest of its migration makes every later start fail on it. Runs on SQLite
// and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo, migrationStatus } from '../../src/storage/database.js';
import { migrationTestLocation } from '../support/postgres.js';
import { refuseWrites } from '../support/refusing-trigger.js';

test('a migration that fails after its first statement leaves nothing behind, and the next start applies it whole', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'half-applied'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0056-device-other-suspensions');
  const at = '2026-03-01T09:00:00+00:00';
  await db.insertInto('users').values({ user_id: 'alice', created_at: at, last_seen: at }).execute();
  await db
    .insertInto('scim_users')
    .values({ scim_id: 's-1', user_id: 'alice', external_id: null, attributes: '{}', created_at: at, updated_at: at })
    .execute();

  // 0057 adds a column, then fills it: the filling fails, as a write on a full disk would.
  const makeSpace = await refuseWrites(db, 'full_disk', 'UPDATE', 'scim_users', 'the disk is full');
  await assert.rejects(migrateToLatest(db), /migration 0057-scim-user-name-key failed: the disk is full/);
  const columns = (await db.introspection.getTables()).find((table) => table.name === 'scim_users')?.columns ?? [];
  assert.equal(
    columns.some((column) => column.name === 'user_name_key'),
    false,
    'the column the failed migration added is gone with it',
  );

  // Space is made again; the next start applies 0057 and what follows.
  await makeSpace();
  await migrateToLatest(db);
  assert.ok(
    (await migrationStatus(db)).every((migration) => migration.appliedAt !== null),
    'every migration is applied',
  );
  assert.deepEqual(await db.selectFrom('scim_users').select(['scim_id', 'user_name_key']).execute(), [
    { scim_id: 's-1', user_name_key: 'alice' },
  ]);
});
