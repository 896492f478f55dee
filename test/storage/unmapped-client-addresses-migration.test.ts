// Migration 0055 on the history before it: a client address a WireGuard over TCP relay wrote
// IPv4-mapped becomes the IPv4 address, so the abuse look-up and a search by that address find
// the session; every other address, and the rest of each row, stays as it was. Runs on SQLite
// and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0055 rewrites the IPv4-mapped client addresses of earlier history rows as IPv4 and leaves the rest as it was', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, '0055'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0054-live-device-certificates');
  const row = (logId: string, originatingIp: string | null) => ({
    log_id: logId,
    user_id: 'alice',
    profile_id: 'employees',
    vpn_proto: 'wireguard',
    connection_id: `c-${logId}`,
    node_number: 0,
    ip_four: '10.0.0.1',
    ip_six: 'fd00::1',
    originating_ip: originatingIp,
    connected_at: '2026-03-01T08:00:00+00:00',
    disconnected_at: null,
    bytes_in: null,
    bytes_out: null,
  });
  await db
    .insertInto('connection_log')
    .values([
      row('1', '::ffff:198.51.100.7'),
      row('2', '198.51.100.8'),
      row('3', '2001:db8::9'),
      row('4', null),
      // Not IPv4-mapped: an IPv6 address that merely starts alike stays.
      row('5', '::ffff:0:c633:640a'),
      row('6', '::ffff:198.51.100.11'),
    ])
    .execute();
  await migrateToLatest(db);
  const rows = await db
    .selectFrom('connection_log')
    .select(['log_id', 'originating_ip', 'ip_four'])
    .orderBy('log_id')
    .execute();
  assert.deepEqual(
    rows.map((entry) => [entry.log_id, entry.originating_ip, entry.ip_four]),
    [
      ['1', '198.51.100.7', '10.0.0.1'],
      ['2', '198.51.100.8', '10.0.0.1'],
      ['3', '2001:db8::9', '10.0.0.1'],
      ['4', null, '10.0.0.1'],
      ['5', '::ffff:0:c633:640a', '10.0.0.1'],
      ['6', '198.51.100.11', '10.0.0.1'],
    ],
  );
});
