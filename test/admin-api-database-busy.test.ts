// When the database cannot take a write (another process holds the write lock past the busy
// timeout), a call answers 503 JSON — "try again later", not a 500 — and leaves nothing half
// done; once the lock is gone the same call succeeds. SQLite only, on both passes of
// test/run.sh: the file lock of another process is SQLite's own way of being busy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { errorBody } from './support/raw-http.js';
import { startTestPortal } from './support/test-portal.js';

test('SQLite only: a write blocked by another process answers 503 and leaves nothing behind', async (t) => {
  const portal = await startTestPortal({ database: 'sqlite' });
  t.after(() => portal.close());
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  // Wait 50 ms for a lock instead of the production 5 s, so the test stays fast.
  await sql`PRAGMA busy_timeout = 50`.execute(portal.portal.ctx.db);
  // A maintenance script opens the same database and holds its write lock.
  const location = portal.portal.ctx.config.database;
  assert.ok(location.dialect === 'sqlite', `the portal runs on SQLite, not ${location.dialect}`);
  const other = new SqliteDatabase(location.path);
  t.after(() => other.close());
  other.exec('BEGIN EXCLUSIVE');

  for (const [path, form] of [
    ['/create', { user_id: 'bob', profile_id: 'employees' }],
    ['/disable_user', { user_id: 'alice' }],
  ] as const) {
    const refused = await portal.post(path, form);
    assert.equal(refused.status, 503, path);
    assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(errorBody(refused.text), 'database unavailable, try again later');
  }
  // Reading still works in WAL mode.
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice'] });

  other.exec('ROLLBACK');
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });
  const created = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  assert.equal(created.status, 200);
  // bob's first attempt took no address: his configuration gets the next one after alice's.
  assert.match(created.text, /^Address = 10\.44\.0\.3\/24,fd44::3\/64$/m);
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice', 'bob'] });
});
