// Migration 0015 on the history before it: addresses a node wrote in a long or upper-case form
// are rewritten in canonical text (so a search by address finds them), everything else is left
// as it was, and the address indexes exist. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0015 rewrites the addresses of earlier history rows in canonical text and leaves the rest as it was', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, '0015'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0014-devices');
  const row = (logId: string, ipFour: string, ipSix: string, originatingIp: string | null) => ({
    log_id: logId,
    user_id: 'alice',
    profile_id: 'employees',
    vpn_proto: 'openvpn',
    connection_id: `c-${logId}`,
    node_number: 0,
    ip_four: ipFour,
    ip_six: ipSix,
    originating_ip: originatingIp,
    connected_at: '2026-03-01T08:00:00+00:00',
    disconnected_at: null,
    bytes_in: null,
    bytes_out: null,
  });
  await db
    .insertInto('connection_log')
    .values([
      row('1', '10.0.0.1', 'FD00:0:0::1', '2001:DB8:0::9'),
      row('2', '10.0.0.2', 'fd00::2', null),
      row('3', '10.0.0.3', '', '192.0.2.1'),
    ])
    .execute();
  await migrateToLatest(db);
  const rows = await db
    .selectFrom('connection_log')
    .select(['log_id', 'ip_four', 'ip_six', 'originating_ip'])
    .orderBy('log_id')
    .execute();
  assert.deepEqual(rows, [
    { log_id: '1', ip_four: '10.0.0.1', ip_six: 'fd00::1', originating_ip: '2001:db8::9' },
    { log_id: '2', ip_four: '10.0.0.2', ip_six: 'fd00::2', originating_ip: null },
    { log_id: '3', ip_four: '10.0.0.3', ip_six: '', originating_ip: '192.0.2.1' },
  ]);
});
