// A change made in the console is in the audit log as the same Admin API call would be: also a
// revocation that found nothing to revoke (a configuration deleted meanwhile, a user disabled
// already), which the API records as a POST that changed nothing, and a change the database
// refused (answered 500), which the API records as a failed POST. Over plain HTTP, as the
// console's forms send it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditLog, twoProfiles } from '../../support/admin-keys.js';
import { confirmChange, signIn } from '../../support/console-forms.js';
import { startTestPortal } from '../../support/test-portal.js';
import { refuseWrites } from '../../support/refusing-trigger.js';

test('a revocation made in the console that found nothing to revoke is in the audit log, as the same Admin API call is', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(portal.close);
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  const [configuration] = await portal.admin.userConfigurationList('alice');
  assert.ok(configuration !== undefined);
  const session = await signIn(portal, portal.secret, 'users');
  const removal = { action: 'disconnect', user_id: 'alice', connection_id: configuration.connection_id };

  assert.equal((await confirmChange(portal, session, removal)).status, 303, 'the configuration is deleted');
  // The same form again (a second tab, a stale Online page): nothing is left to delete.
  assert.equal((await confirmChange(portal, session, removal)).status, 303);
  assert.equal((await confirmChange(portal, session, { action: 'disable_user', user_id: 'alice' })).status, 303);
  assert.equal((await confirmChange(portal, session, { action: 'disable_user', user_id: 'alice' })).status, 303);
  // The API's own calls, for comparison: each is recorded though it changed nothing.
  assert.equal(
    (await portal.post('/delete_connection', { user_id: 'alice', connection_id: configuration.connection_id })).status,
    204,
  );
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);

  const rows = (await auditLog(portal))
    .filter((row) => row.call === 'delete_connection' || row.call === 'disable_user')
    .reverse();
  assert.deepEqual(
    rows.map((row) => [row.keyName, row.call, row.status, row.userId, row.connectionIds.length]),
    [
      ['secret', 'delete_connection', 204, 'alice', 1],
      ['secret', 'delete_connection', 204, 'alice', 0],
      ['secret', 'disable_user', 204, 'alice', 0],
      ['secret', 'disable_user', 204, 'alice', 0],
      ['secret', 'delete_connection', 204, 'alice', 0],
      ['secret', 'disable_user', 204, 'alice', 0],
    ],
  );
});

test('a change made in the console that failed with a server error is in the audit log with its 500, as the same Admin API call is', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(portal.close);
  const db = portal.portal.ctx.db;
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const session = await signIn(portal, portal.secret, 'users');

  // The database refuses to change a user (a failing statement, not an outage: the portal
  // answers 500, and the audit log can still be written).
  const allowUserChanges = await refuseWrites(db, 'refuse_user_change', 'UPDATE', 'users', 'users may not change');
  assert.equal((await confirmChange(portal, session, { action: 'disable_user', user_id: 'alice' })).status, 500);
  // The API's own call, for comparison.
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 500);
  await allowUserChanges();

  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] }, 'nothing was changed');
  const rows = (await auditLog(portal)).filter((row) => row.call === 'disable_user').reverse();
  assert.deepEqual(
    rows.map((row) => [row.keyName, row.call, row.status, row.userId, row.detail]),
    [
      ['secret', 'disable_user', 500, 'alice', 'internal error; the portal log has the details'],
      ['secret', 'disable_user', 500, 'alice', 'internal error; the portal log has the details'],
    ],
  );
});
