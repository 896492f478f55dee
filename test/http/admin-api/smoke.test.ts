import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestPortal } from '../../support/test-portal.js';

test('an administrator creates a WireGuard configuration and finds it listed', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const created = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees' },
    { accept: 'application/x-wireguard-profile' },
  );
  assert.equal(created.status, 200);
  assert.equal(created.headers.get('content-type'), 'application/x-wireguard-profile');
  assert.match(created.text, /^\[Interface\]\nPrivateKey = /);

  const users = await portal.get('/users');
  assert.deepEqual(users.json(), { users: ['alice'] });
});
