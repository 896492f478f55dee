// Migration 0066 on the data before it: each user destroyed before whose destroy receipt is still
// there is known letter case aside from then on, so that a device certificate naming it in other
// letters does not make it again; one whose receipt was gone is known by its exact id alone. Runs
// on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { asUserId } from '../../src/shared/ids.js';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { destroyedUserDigest } from '../../src/storage/destroyed-user-digest.js';
import { destroyedAnyCase, noteDestroyedUser } from '../../src/storage/destroyed-users.js';
import { insertRevocation } from '../../src/storage/revocations.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0066 keys by their name letter case aside the users destroyed before it whose receipts it finds', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'destroyed-user-name-keys'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0063-live-device-identifiers-any-case');
  // Alice's destroy has its receipt; Bob's receipt was pruned since (only his digest is left).
  await insertRevocation(db, {
    revocationId: 'r1',
    userId: asUserId('Alice@Example.org'),
    reason: 'destroy',
    requestedAt: '2026-03-01T08:00:00+00:00',
  });
  // As 0043 and the destroys before 0066 wrote them: the digest of the id alone.
  const destroyedBefore = (userId: string) =>
    sql`INSERT INTO destroyed_users (user_digest, destroyed_at)
      VALUES (${destroyedUserDigest(userId)}, '2026-03-01T08:00:00+00:00')`.execute(db);
  await destroyedBefore('Alice@Example.org');
  await destroyedBefore('Bob@Example.org');

  await migrateToLatest(db);
  assert.equal(await destroyedAnyCase(db, asUserId('alice@example.org')), true, 'known by its receipt');
  assert.equal(await destroyedAnyCase(db, asUserId('Bob@Example.org')), true, 'by its exact id');
  assert.equal(
    await destroyedAnyCase(db, asUserId('bob@example.org')),
    false,
    'its receipt gone: nothing to key it by',
  );
  // Destroyed after the migration: known letter case aside.
  await noteDestroyedUser(db, asUserId('Carol@Example.org'), '2026-06-01T08:00:00+00:00');
  assert.equal(await destroyedAnyCase(db, asUserId('CAROL@example.org')), true);
});
