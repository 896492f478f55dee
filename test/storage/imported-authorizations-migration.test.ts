// Migration 0037 on the data before it: every OAuth authorization here (only an eduVPN import
// makes them) is noted as brought, so that a later import leaves one deleted here since. Runs on
// SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asConnectionId, asNodeNumber, asProfileId, asUserId } from '../../src/shared/ids.js';
import { insertAuthorizations } from '../../src/storage/authorizations.js';
import { insertImportedCertificates } from '../../src/storage/certificates.js';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { noteImportedRecords } from '../../src/storage/imported-records.js';
import { insertImportedUsers } from '../../src/storage/users.js';
import { migrationTestLocation } from '../support/postgres.js';

const USER_IMPORTED_AT = '2026-11-30T12:00:00+00:00';

test('0037 notes each authorization here as brought, until the later of its expiry and its configurations’', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'imported-authorizations'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0036-user-disabled-by');
  const user = (userId: string) => ({
    userId: asUserId(userId),
    createdAt: USER_IMPORTED_AT,
    lastSeen: USER_IMPORTED_AT,
    permissionList: '[]',
    authData: null,
    isDisabled: false,
  });
  const authorization = (authKey: string, userId: string) => ({
    authKey,
    userId: asUserId(userId),
    clientId: 'org.eduvpn.app.linux',
    scope: 'config',
    authorizedAt: '2026-10-01T08:00:00+00:00',
    expiresAt: '2027-01-01T00:00:00+00:00',
  });
  await db.transaction().execute(async (trx) => {
    await insertImportedUsers(trx, [user('alice'), user('bob')]);
    await insertAuthorizations(trx, [authorization('alice-app', 'alice'), authorization('bob-app', 'bob')]);
    await insertImportedCertificates(trx, [
      {
        commonName: asConnectionId('bob-certificate'),
        userId: asUserId('bob'),
        profileId: asProfileId('employees'),
        nodeNumber: asNodeNumber(0),
        displayName: 'bob',
        createdAt: '2026-10-01T08:00:00+00:00',
        expiresAt: '2029-01-01T00:00:00+00:00',
        authKey: 'bob-app',
        publicKey: null,
        expiryWarned: false,
      },
    ]);
  });
  // alice came with an import that noted her; bob was made here before the import noted anyone.
  await noteImportedRecords(db, [{ kind: 'user', recordId: 'alice', importedAt: USER_IMPORTED_AT, expiresAt: null }]);

  const before = new Date().toISOString().slice(0, 19);
  await migrateToLatest(db);
  const notes = await db
    .selectFrom('imported_records')
    .selectAll()
    .where('kind', '=', 'authorization')
    .orderBy('record_id')
    .execute();
  assert.deepEqual(
    notes.map((note) => [note.record_id, note.expires_at]),
    [
      ['alice-app', '2027-01-01T00:00:00+00:00'],
      ['bob-app', '2029-01-01T00:00:00+00:00'],
    ],
    'kept until the later of its own expiry and that of the configuration naming it',
  );
  assert.equal(notes[0]?.imported_at, USER_IMPORTED_AT, 'brought with its user');
  assert.ok((notes[1]?.imported_at ?? '') >= before, 'its user never noted: from the migration');
});
