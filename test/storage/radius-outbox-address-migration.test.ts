// Migration 0060 on the data before it: the RADIUS accounting records waiting in the outbox get
// the tunnel address they report (IPv4, else IPv6), so they too go in order with the records
// queued after the upgrade. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { migrationTestLocation } from '../support/postgres.js';

const AT = '2026-12-06T03:00:00+00:00';

test('0060 gives the waiting records the address they report, IPv4 first, and none to a record that reports none', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'radius-outbox-address'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0059-console-oidc-session-rules');
  const waiting = (
    recordId: string,
    addresses: { framedIpAddress: string | null; framedIpv6Address: string | null },
  ) => ({
    record_id: recordId,
    server: '192.0.2.1:1813',
    acct_session_id: `session-${recordId}`,
    connection_id: `key-${recordId}`,
    record: JSON.stringify({ statusType: 'Stop', sessionId: `session-${recordId}`, userName: 'alice', ...addresses }),
    event_at: AT,
    attempts: 1,
    next_attempt_at: AT,
  });
  await db
    .insertInto('radius_outbox')
    .values([
      waiting('r1', { framedIpAddress: '10.44.0.7', framedIpv6Address: 'fd44::7' }),
      waiting('r2', { framedIpAddress: null, framedIpv6Address: 'fd44::8' }),
      waiting('r3', { framedIpAddress: null, framedIpv6Address: null }),
    ])
    .execute();

  await migrateToLatest(db);
  const rows = await db.selectFrom('radius_outbox').select(['record_id', 'address']).orderBy('record_id').execute();
  assert.deepEqual(
    rows.map((row) => [row.record_id, row.address]),
    [
      ['r1', '10.44.0.7'],
      ['r2', 'fd44::8'],
      ['r3', null],
    ],
  );
});
