// PostgreSQL's counterpart of the SQLite busy test: when a write waits longer than the lock
// timeout for a lock another session holds (a maintenance script, a long migration), the call
// answers 503 JSON — "try again later", not a 500 — and leaves nothing half done; once the
// lock is gone the same call succeeds. The portal's default lock timeout is 5 s, as SQLite's
// busy timeout; the test sets 100 ms through the URL (`?lock_timeout=100`).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorBody } from '../support/raw-http.js';
import { createTestDatabase, dropTestDatabase, onServer, postgresServerUrl } from '../support/postgres.js';
import { startTestPortal } from '../support/test-portal.js';

test('PostgreSQL: a write blocked by another session past the lock timeout answers 503 and leaves nothing behind', async (t) => {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  const portal = await startTestPortal({ database: `${url}?lock_timeout=100` });
  t.after(async () => {
    await portal.close();
    await dropTestDatabase(server, name);
  });
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  await onServer(url, async (other) => {
    // A maintenance script locks the users table against writes; reads still pass.
    await other.query('BEGIN');
    await other.query('LOCK TABLE users IN EXCLUSIVE MODE');
    for (const [path, form] of [
      ['/create', { user_id: 'bob', profile_id: 'employees' }],
      ['/create', { user_id: 'alice', profile_id: 'employees' }],
      ['/disable_user', { user_id: 'alice' }],
    ] as const) {
      const refused = await portal.post(path, form);
      assert.equal(refused.status, 503, `${path} ${JSON.stringify(form)}: ${refused.text}`);
      assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(errorBody(refused.text), 'database unavailable, try again later');
    }
    assert.deepEqual((await portal.get('/users')).json(), { users: ['alice'] });
    await other.query('ROLLBACK');
  });

  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });
  const configurations = { user_configuration_list: await portal.admin.userConfigurationList('alice') };
  assert.equal(configurations.user_configuration_list.length, 1, "alice's refused create left no configuration");
  const created = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  assert.equal(created.status, 200);
  // The refused attempts took no address: bob's configuration gets the next one after alice's.
  assert.match(created.text, /^Address = 10\.44\.0\.3\/24,fd44::3\/64$/m);
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice', 'bob'] });
});
