// A backlog of history on PostgreSQL, where every statement of the portal has `databaseTimeout`:
// an administrator shortens a retention, or the portal was down for weeks, and the daily
// housekeeping owes more rows than one statement changes in that time. It deletes and blanks
// them in batches, each well within the limit, so the run ends, all of them go, a held user's
// stay, and the counts are exact (one statement for them all ran past the limit, every day).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import { ManualClock } from '../../support/admin-keys.js';
import { onServer } from '../../support/postgres.js';
import { startTestPortal } from '../../support/test-portal.js';

/** Closed sessions past connectionLogRetention (P1M): hundreds of batches. */
const BACKLOG = 500_000;
/**
 * Newer sessions (past originatingIpRetention, P7D) whose client address it blanks: one UPDATE
 * of them all takes seconds on the test machine (about 18 µs a row), well past PT1S.
 */
const ADDRESSED = 150_000;
/** The backlog's users: `user-0` … `user-99`, one session each in turn; `user-7` is held. */
const USERS = 100;

test('PostgreSQL, databaseTimeout PT1S: the housekeeping works off a backlog of 650,000 sessions in batches, and counts them exactly', async (t) => {
  const clock = new ManualClock('2026-06-01T09:00:00Z');
  const portal = await startTestPortal({ clock, config: { databaseTimeout: 'PT1S' } });
  t.after(portal.close);
  await portal.reconcile(); // the first day's housekeeping is done before the backlog is written
  const started = Date.now();
  // Written on a connection of its own, without the portal's limit.
  await onServer(portal.database, async (client) => {
    const sessions = (first: number, count: number, ended: string) => `
      INSERT INTO connection_log (log_id, user_id, profile_id, vpn_proto, connection_id, node_number,
        ip_four, ip_six, originating_ip, connected_at, disconnected_at, bytes_in, bytes_out)
      SELECT 'backlog-' || lpad(i::text, 9, '0'), 'user-' || (i % ${USERS}), 'employees', 'openvpn',
        'c' || i, 0, '10.44.0.9', 'fd44::9', '192.0.2.' || (i % 250),
        to_char(timestamp '${ended}' + (i - ${first}) * interval '1 second' - interval '1 hour', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'),
        to_char(timestamp '${ended}' + (i - ${first}) * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'), 1, 2
      FROM generate_series(${first}, ${first + count - 1}) AS i`;
    await client.query(sessions(1, BACKLOG, '2026-01-01 00:00:00'));
    await client.query(sessions(BACKLOG + 1, ADDRESSED, '2026-05-20 00:00:00'));
    await client.query('VACUUM ANALYZE connection_log');
  });
  t.diagnostic(`backlog written in ${Date.now() - started} ms`);
  await portal.admin.createLegalHold({
    user_id: 'user-7',
    reason: 'CSIRT case 2026-017',
    until: '2026-12-01T00:00:00Z',
  });

  clock.advance(86_400_000); // the next day's run is due
  const ran = Date.now();
  const result = await runHousekeepingIfDue(portal.portal.ctx);
  t.diagnostic(`housekeeping ran in ${Date.now() - ran} ms`);
  const heldOld = BACKLOG / USERS;
  const heldNew = ADDRESSED / USERS;
  assert.deepEqual(result?.retention.kinds['connection_log'], { removed: BACKLOG - heldOld, held: heldOld });
  assert.deepEqual(result?.retention.kinds['originating_ip'], {
    removed: ADDRESSED - heldNew,
    held: heldOld + heldNew,
  });
  const left = await onServer(portal.database, async (client) => {
    const { rows } = await client.query<{ user_id: string; sessions: string; addressed: string }>(
      `SELECT user_id = 'user-7' AS user_id, count(*) AS sessions, count(originating_ip) AS addressed
       FROM connection_log GROUP BY 1 ORDER BY 1`,
    );
    return rows.map((entry) => [String(entry.user_id), Number(entry.sessions), Number(entry.addressed)]);
  });
  assert.deepEqual(
    left,
    [
      ['false', ADDRESSED - heldNew, 0],
      ['true', heldOld + heldNew, heldOld + heldNew],
    ],
    "the held user's sessions stay, addresses and all; the others' newer ones stay without",
  );
});
