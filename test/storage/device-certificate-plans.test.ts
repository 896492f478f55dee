// What a device CA's revocation list asks of the devices, and what every enrollment and MDM push
// asks, reads an index on both databases, not every device: asked of the database's own planner
// with the very queries the portal runs, over a fleet of devices bound to certificates (most by
// one CA, a few by an intermediate, some bound before the issuer's fingerprint was kept, some
// retired). PostgreSQL keeps statistics of its tables by itself, and is given them here; SQLite
// keeps none unless asked, and the portal never asks, so its pass plans without, as in use.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { isPostgres, type Db } from '../../src/storage/database.js';
import {
  liveDeviceQuery,
  liveDevicesAnyCaseQuery,
  liveDevicesIssuedByQuery,
  liveDevicesWithCertificatesQuery,
} from '../../src/storage/devices.js';
import { queryPlan } from '../support/query-plans.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

const DEVICE_CA = { subject: 'CN=Devices CA,O=Example', fingerprint: 'a1'.repeat(32) };
const INTERMEDIATE = { subject: 'CN=Devices Intermediate,O=Example', fingerprint: 'b2'.repeat(32) };
const FLEET = 2000;
const AT = '2026-03-01T12:00:00+00:00';

let portal: TestPortal;
let db: Db;

before(async () => {
  portal = await startTestPortal();
  db = portal.portal.ctx.db;
  await db.insertInto('users').values({ user_id: 'fleet', created_at: AT, last_seen: AT }).execute();
  const devices = Array.from({ length: FLEET }, (_, index) => {
    const ca = index % 50 === 1 ? INTERMEDIATE : DEVICE_CA;
    return {
      device_id: `dev_${String(index).padStart(26, '0')}`,
      user_id: 'fleet',
      profile_id: 'employees',
      platform: 'macos',
      serial: `C02${index}`,
      mdm_id: `mdm-${index}`,
      identity: 'certificate',
      certificate_subject: `CN=device ${index}`,
      certificate_issuer: ca.subject,
      certificate_serial: (index * 7919 + 4096).toString(16),
      certificate_not_after: '2027-03-01T12:00:00+00:00',
      certificate_issuer_fingerprint: index % 10 === 0 ? null : ca.fingerprint,
      state: index % 5 === 0 ? 'retired' : 'active',
      created_at: AT,
    };
  });
  for (let start = 0; start < FLEET; start += 500)
    await db
      .insertInto('devices')
      .values(devices.slice(start, start + 500))
      .execute();
  if (isPostgres(db)) await sql`ANALYZE devices`.execute(db);
});
after(() => portal.close());

const fullScan = /\bSCAN devices\b(?! USING)|Seq Scan on devices/;

/** A serial number as the portal asks for it: in the certificate's own spellings. */
const spellings = (serial: string) => [serial, `00${serial}`, serial.toUpperCase(), `00${serial.toUpperCase()}`];

test('a revocation list looks its revoked serials up in the index of live certificates by serial', async () => {
  const serials = ['1f0f', '3b8e'].flatMap(spellings);
  const plan = await queryPlan(
    db,
    liveDevicesWithCertificatesQuery(
      db,
      { issuer: DEVICE_CA.subject, signers: [DEVICE_CA.fingerprint] },
      serials,
    ).compile(),
  );
  assert.match(
    plan,
    /SEARCH devices USING INDEX devices_live_certificate_serial \(certificate_serial=\?\)|devices_live_certificate_serial[\s\S]*Index Cond: \(\(certificate_serial\)::text = ANY/,
    plan,
  );
  assert.doesNotMatch(plan, fullScan, plan);
});

// A whole batch is 1,000 spellings: SQLite looks each one up; PostgreSQL weighs that against the
// fleet, and on one this small reads the live certificates' index whole instead (from some
// 100,000 live certificates on, it looks each one up).
test('a whole batch of revoked serials reads only the live certificates, never every device', async () => {
  const serials = Array.from({ length: 250 }, (_, index) => (index * 104729 + 65536).toString(16)).flatMap(spellings);
  const plan = await queryPlan(
    db,
    liveDevicesWithCertificatesQuery(
      db,
      { issuer: DEVICE_CA.subject, signers: [DEVICE_CA.fingerprint] },
      serials,
    ).compile(),
  );
  assert.match(plan, /devices_live_certificate_(serial|issuer)/, plan);
  assert.doesNotMatch(plan, fullScan, plan);
});

test('the devices a revoked CA issued are found in the index by its fingerprint, and by its name for older ones', async () => {
  const plan = await queryPlan(db, liveDevicesIssuedByQuery(db, [INTERMEDIATE]).compile());
  assert.match(
    plan,
    /devices_live_certificate_issuer \(certificate_issuer_fingerprint=\?\)|devices_live_certificate_issuer .*\n\s+Index Cond: \(certificate_issuer_fingerprint = /,
    plan,
  );
  assert.match(
    plan,
    /devices_live_certificate_issuer \(certificate_issuer_fingerprint=\? AND certificate_issuer=\?\)|devices_live_certificate_issuer .*\n\s+Index Cond: \(\(certificate_issuer_fingerprint IS NULL\) AND \(certificate_issuer = /,
    plan,
  );
  assert.doesNotMatch(plan, fullScan, plan);
});

test('an enrollment or an MDM push finds its live device by serial or MDM id in an index', async () => {
  for (const [by, value, index] of [
    ['serial', 'C021234', /devices_live_serial|devices_by_serial/],
    ['mdm_id', 'mdm-1234', /devices_live_mdm_id|devices_by_mdm_id/],
  ] as const) {
    const plan = await queryPlan(db, liveDeviceQuery(db, by, value).compile());
    assert.match(plan, index, plan);
    assert.doesNotMatch(plan, fullScan, plan);
  }
});

test('an MDM push that names a device in another letter case finds it in the lower-cased index', async () => {
  for (const [by, value, index] of [
    ['serial', 'c021234', /devices_live_serial_lower/],
    ['mdm_id', 'MDM-1234', /devices_live_mdm_id_lower/],
  ] as const) {
    const plan = await queryPlan(db, liveDevicesAnyCaseQuery(db, by, value).compile());
    assert.match(plan, index, plan);
    assert.doesNotMatch(plan, fullScan, plan);
  }
});
