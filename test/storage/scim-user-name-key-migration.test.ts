// Migration 0057 on the SCIM users before it: each is given the key its userName is compared by
// without regard to case, and a directory that finds it by its name in another case finds it.
// Two users whose names differ only in case (a directory's second POST made a second one before
// 0057) are both kept: the oldest takes the key, the other is reached by its SCIM id alone, and
// the unique index holds. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { findScimUser, findScimUserNamed, insertScimUser } from '../../src/storage/scim-users.js';
import { asUserId } from '../../src/shared/ids.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0057 keys the SCIM users by their name in lower case, the oldest of two names that differ only in case taking the key', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, '0057'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0056-device-other-suspensions');
  // Alice@Example.org was made first; the directory, asking again in lower case, found nothing
  // and made alice@example.org a day later. Émile and bob are alone in their names.
  const users: [scimId: string, userId: string, createdAt: string][] = [
    ['s-2', 'alice@example.org', '2026-03-02T09:00:00+00:00'],
    ['s-1', 'Alice@Example.org', '2026-03-01T09:00:00+00:00'],
    ['s-3', 'Émile', '2026-03-01T10:00:00+00:00'],
    ['s-4', 'bob', '2026-03-01T11:00:00+00:00'],
  ];
  await db
    .insertInto('users')
    .values(users.map(([, userId, createdAt]) => ({ user_id: userId, created_at: createdAt, last_seen: createdAt })))
    .execute();
  for (const [scimId, userId, createdAt] of users)
    await db
      .insertInto('scim_users')
      .values({
        scim_id: scimId,
        user_id: userId,
        external_id: null,
        attributes: '{}',
        created_at: createdAt,
        updated_at: createdAt,
      })
      .execute();

  await migrateToLatest(db);
  const rows = await db.selectFrom('scim_users').select(['scim_id', 'user_name_key']).orderBy('scim_id').execute();
  assert.deepEqual(
    rows.map((row) => [row.scim_id, row.user_name_key]),
    [
      ['s-1', 'alice@example.org'],
      ['s-2', null],
      ['s-3', 'émile'],
      ['s-4', 'bob'],
    ],
  );
  assert.equal((await findScimUserNamed(db, 'ALICE@example.ORG'))?.scimId, 's-1');
  assert.equal((await findScimUserNamed(db, 'ÉMILE'))?.scimId, 's-3');
  assert.equal((await findScimUser(db, 's-2'))?.userId, 'alice@example.org', 'the younger one is kept');

  // The key is unique from now on: a third spelling cannot be linked.
  await db.insertInto('users').values({ user_id: 'BOB', created_at: 'x', last_seen: 'x' }).execute();
  await assert.rejects(
    insertScimUser(db, {
      scimId: 's-5',
      userId: asUserId('BOB'),
      externalId: null,
      attributes: {},
      createdAt: 'x',
      updatedAt: 'x',
    }),
  );
});
