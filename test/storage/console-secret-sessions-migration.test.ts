// Migration 0050 on the data before it: console sessions signed in with the Admin API secret kept
// a plain SHA-256 of it, which now holds a keyed digest; they are ended (their holders sign in
// again once) and sessions of admin keys stay. Runs on SQLite and, in the PostgreSQL pass, on
// PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { migrationTestLocation } from '../support/postgres.js';

const AT = '2026-11-30T12:00:00+00:00';

test('0050 ends the console sessions of the Admin API secret and keeps those of admin keys', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'console-secret-sessions'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0049-radius-outbox-event-at');
  const session = (sessionHash: string, method: 'secret' | 'admin-key') => ({
    session_hash: sessionHash,
    method,
    key_id: method === 'admin-key' ? 'k1' : null,
    subject: method === 'admin-key' ? 'ops' : 'secret',
    secret_digest: method === 'secret' ? 'a'.repeat(64) : null,
    csrf_token: 'c'.repeat(64),
    created_at: AT,
    last_seen_at: AT,
    expires_at: '2026-12-01T00:00:00+00:00',
  });
  await db
    .insertInto('console_sessions')
    .values([session('1'.repeat(64), 'secret'), session('2'.repeat(64), 'admin-key')])
    .execute();

  await migrateToLatest(db);
  const rows = await db.selectFrom('console_sessions').select(['session_hash', 'method']).execute();
  assert.deepEqual(
    rows.map((row) => [row.session_hash, row.method]),
    [['2'.repeat(64), 'admin-key']],
  );
});
