// Migration 0059 on the data before it: OpenID console sessions kept no digest of the rules that
// granted them, so they cannot be checked against the configuration's and are ended (their holders
// sign in again once); sessions of admin keys stay. Runs on SQLite and, in the PostgreSQL pass, on
// PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { migrationTestLocation } from '../support/postgres.js';

const AT = '2026-12-04T12:00:00+00:00';

test('0059 ends the OpenID console sessions, which name no rules, and keeps those of admin keys', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'console-oidc-session-rules'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0058-device-jamf-event-at');
  const session = (sessionHash: string, method: 'oidc' | 'admin-key') => ({
    session_hash: sessionHash,
    method,
    key_id: method === 'admin-key' ? 'k1' : null,
    subject: method === 'admin-key' ? 'ops' : 'alice',
    secret_digest: null,
    scope: method === 'oidc' ? 'admin' : null,
    profiles: null,
    csrf_token: 'c'.repeat(64),
    created_at: AT,
    last_seen_at: AT,
    expires_at: '2026-12-05T00:00:00+00:00',
  });
  await db
    .insertInto('console_sessions')
    .values([session('1'.repeat(64), 'oidc'), session('2'.repeat(64), 'admin-key')])
    .execute();

  await migrateToLatest(db);
  const rows = await db
    .selectFrom('console_sessions')
    .select(['session_hash', 'method', 'oidc_rules_digest'])
    .execute();
  assert.deepEqual(
    rows.map((row) => [row.session_hash, row.method, row.oidc_rules_digest]),
    [['2'.repeat(64), 'admin-key', null]],
  );
});
