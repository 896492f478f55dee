// Migration 0056 on the data before it: a device suspended then keeps its one suspension, now
// with no other reason standing, and a suspension recorded after it keeps every reason. Runs on
// SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asDeviceId } from '../../src/shared/ids.js';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { findDevice, replaceSuspension } from '../../src/storage/devices.js';
import { migrationTestLocation } from '../support/postgres.js';

const AT = '2026-01-10T12:00:00+00:00';
const DEVICE = asDeviceId('dev_000000000001aaaaaaaaaaaa');

test('0056 leaves a device suspended before it with its one reason, and keeps the reasons recorded after it', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'device-other-suspensions'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0055-unmapped-client-addresses');
  await db
    .insertInto('users')
    .values({ user_id: 'alice', created_at: AT, last_seen: AT, auth_data: null, is_disabled: 0, disabled_by: null })
    .execute();
  await db
    .insertInto('devices')
    .values({
      device_id: DEVICE,
      user_id: 'alice',
      profile_id: 'employees',
      platform: 'macos',
      serial: 'C02OLD0001',
      mdm_id: null,
      identity: 'token',
      certificate_subject: null,
      certificate_issuer: null,
      certificate_serial: null,
      certificate_not_after: null,
      certificate_issuer_fingerprint: null,
      state: 'suspended',
      created_at: AT,
      retired_at: null,
      last_seen_at: null,
      suspended_reason: 'noncompliant',
      suspended_at: AT,
      suspended_by: '(portal)',
    })
    .execute();

  await migrateToLatest(db);
  assert.deepEqual((await findDevice(db, DEVICE))?.suspension, {
    reason: 'noncompliant',
    since: AT,
    by: '(portal)',
    others: [],
  });
  const other = { reason: 'jamf-group', since: '2026-01-11T08:00:00+00:00', by: 'jamf' };
  assert.equal(
    await replaceSuspension(db, DEVICE, { reason: 'noncompliant', since: AT, by: '(portal)', others: [other] }),
    true,
  );
  assert.deepEqual((await findDevice(db, DEVICE))?.suspension?.others, [other]);
});
