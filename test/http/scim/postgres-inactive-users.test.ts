// The directory calling a user inactive, when something else holds the user's row on PostgreSQL:
// what the directory sent is saved only together with its disable, and an administrator's
// disable that commits while the directory's waits stays the administrator's. PostgreSQL only:
// SQLite runs one writing transaction at a time, so there nothing holds a row between two
// statements of another's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import type { AdminCall } from '../../../src/core/admin-call.js';
import type { PortalContext } from '../../../src/core/context.js';
import { replaceDirectoryUser } from '../../../src/core/directory/index.js';
import { readUser } from '../../../src/protocol/scim.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const entra = (givenName: string, active: boolean) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: 'alice',
  name: { givenName },
  active,
});

test('a PUT that calls a user inactive while its row is held saves nothing; the directory’s retry saves the change and disables the user', async (t) => {
  const portal = await startTestPortal({ config: { databaseTimeout: 'PT1S' } });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const id = String((await scim.send('POST', 'Users', entra('Alice', true))).body?.['id']);
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  // Another transaction holds alice's row (a long import step, a stuck session) past the
  // portal's databaseTimeout while the directory says she left.
  const holder = new pg.Client({ connectionString: portal.database });
  await holder.connect();
  let refused: Awaited<ReturnType<typeof scim.send>>;
  try {
    await holder.query('begin');
    await holder.query(`select user_id from users where user_id = 'alice' for update`);
    refused = await scim.send('PUT', `Users/${id}`, entra('Alicia', false));
  } finally {
    await holder.end();
  }
  assert.equal(refused.status, 503, JSON.stringify(refused.body));

  const unchanged = await scim.send('GET', `Users/${id}`);
  assert.deepEqual(unchanged.body?.['name'], { givenName: 'Alice' }, 'the refused change saved nothing');
  assert.equal(unchanged.body?.['active'], true);

  const retried = await scim.send('PUT', `Users/${id}`, entra('Alicia', false));
  assert.equal(retried.status, 200, JSON.stringify(retried.body));
  assert.equal(retried.body?.['active'], false);
  assert.deepEqual(retried.body?.['name'], { givenName: 'Alicia' });
  assert.equal(retried.receipts.length, 1, 'the disable answers its receipt');
  assert.deepEqual(await portal.admin.disabledUsers(), ['alice']);
});

test('an administrator’s disable that commits while the directory’s disable waits stays the administrator’s: the directory cannot enable the user again', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const id = String((await scim.send('POST', 'Users', entra('Alice', true))).body?.['id']);
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  // The directory's PUT (as its route makes it) read alice as enabled and saved its change; it is
  // held there, before it disables her.
  const hold = new HoldStatement((node, text) => node.kind === 'UpdateQueryNode' && text.includes('"scim_users"'));
  const base = portal.portal.ctx;
  const call: AdminCall = {
    caller: { kind: 'command-line', sourceAddress: 'local' },
    name: 'scim PUT /Users',
    parameters: { id },
    successStatus: 200,
  };
  const ctx: PortalContext = { ...base, db: base.db.withPlugin(hold), call, events: base.events.forCall(call) };
  const replacing = replaceDirectoryUser(ctx, id, readUser(entra('Alice', false)));
  await hold.reached;

  // Meanwhile an administrator disables alice during an incident.
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  hold.release();
  const replaced = await replacing;
  assert.equal(replaced.user.active, false);
  assert.deepEqual(replaced.revocationIds, [], 'the administrator’s disable took everything already');

  // The directory, later, calls alice active again: her disable is the administrator's.
  const active = await scim.send('PUT', `Users/${id}`, entra('Alice', true));
  assert.equal(active.status, 200, JSON.stringify(active.body));
  assert.equal(active.body?.['active'], false);
  assert.deepEqual(await portal.admin.disabledUsers(), ['alice']);
});
