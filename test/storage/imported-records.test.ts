// The eduVPN import's notes of what it brought are kept only while a later import could still
// bring back something removed here: a configuration's or authorization's until its eduVPN expiry
// (then eduVPN's copy is expired too), a user's while it is here or its destroy receipt is kept.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asUserId } from '../../src/shared/ids.js';
import { importedRecordsGone, noteImportedRecords, pruneImportedRecords } from '../../src/storage/imported-records.js';
import { insertRevocation } from '../../src/storage/revocations.js';
import { insertImportedUsers } from '../../src/storage/users.js';
import { startTestPortal } from '../support/test-portal.js';

const IMPORTED_AT = '2026-11-30T12:00:00+00:00';

test('a configuration or authorization note goes once its eduVPN expiry passed, a destroyed user’s once its destroy receipt is gone, a user here stays', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  await db.transaction().execute((trx) =>
    insertImportedUsers(trx, [
      {
        userId: asUserId('here'),
        createdAt: IMPORTED_AT,
        lastSeen: IMPORTED_AT,
        permissionList: '[]',
        authData: null,
        isDisabled: false,
      },
    ]),
  );
  await insertRevocation(db, {
    revocationId: 'destroy-of-gone',
    userId: asUserId('gone'),
    reason: 'destroy',
    requestedAt: IMPORTED_AT,
  });
  await noteImportedRecords(db, [
    { kind: 'wireguard', recordId: 'key-2027', importedAt: IMPORTED_AT, expiresAt: '2027-01-01T00:00:00+00:00' },
    { kind: 'openvpn', recordId: 'name-2031', importedAt: IMPORTED_AT, expiresAt: '2031-01-01T00:00:00+00:00' },
    { kind: 'authorization', recordId: 'app-2027', importedAt: IMPORTED_AT, expiresAt: '2027-06-01T00:00:00+00:00' },
    { kind: 'authorization', recordId: 'app-2030', importedAt: IMPORTED_AT, expiresAt: '2030-01-01T00:00:00+00:00' },
    { kind: 'user', recordId: 'here', importedAt: IMPORTED_AT, expiresAt: null },
    { kind: 'user', recordId: 'gone', importedAt: IMPORTED_AT, expiresAt: null },
    { kind: 'user', recordId: 'receipt-pruned', importedAt: IMPORTED_AT, expiresAt: null },
  ]);
  const noted = async () =>
    (await db.selectFrom('imported_records').select('record_id').orderBy('record_id').execute()).map(
      (row) => row.record_id,
    );
  assert.deepEqual(
    [...(await importedRecordsGone(db, 'user', ['here', 'gone', 'never-imported']))],
    [['gone', { importedAt: IMPORTED_AT, withheld: false }]],
    'a user brought and not here is gone; one here or never brought is not',
  );

  assert.deepEqual(
    [...(await importedRecordsGone(db, 'authorization', ['app-2027', 'never-imported']))],
    [['app-2027', { importedAt: IMPORTED_AT, withheld: false }]],
    'an authorization brought and not here is gone',
  );

  assert.equal(await pruneImportedRecords(db, '2028-01-01T00:00:00+00:00'), 3);
  assert.deepEqual(await noted(), ['app-2030', 'gone', 'here', 'name-2031']);

  await db.deleteFrom('revocations').where('revocation_id', '=', 'destroy-of-gone').execute();
  assert.equal(await pruneImportedRecords(db, '2028-01-01T00:00:00+00:00'), 1);
  assert.deepEqual(await noted(), ['app-2030', 'here', 'name-2031']);
});
