// The events seam: what core announces, in order, for a day in an administrator's life; and a
// listener that writes in the change's transaction can veto the change; closing listeners come
// last, and their writes run in the change's transaction.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalEvent } from '../../src/core/events.js';
import { isPostgres } from '../../src/storage/database.js';
import { readListingGeneration } from '../../src/storage/listing-generation.js';
import { startTestPortal } from '../support/test-portal.js';

test('create (and the user it made), disable, enable, delete and destroy are announced after they committed, with the configuration they touched', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const seen: PortalEvent[] = [];
  portal.portal.ctx.events.afterCommit((event) => {
    if (!event.type.startsWith('node.') && event.type !== 'reconcile.finished') seen.push(event);
  });
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  assert.equal(created.status, 200);
  await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  const [first] = await portal.admin.userConfigurationList('alice');
  assert.ok(first !== undefined);
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.equal((await portal.post('/enable_user', { user_id: 'alice' })).status, 204);
  assert.equal(
    (await portal.post('/delete_connection', { user_id: 'alice', connection_id: first.connection_id })).status,
    204,
  );
  assert.equal((await portal.post('/destroy', { user_id: 'alice' })).status, 204);
  await new Promise((resolve) => setImmediate(resolve));

  // Each change made through the Admin API ends with the call that made it (the audit log's event).
  assert.deepEqual(
    seen.map((event) => event.type),
    [
      ...['user.created', 'configuration.created', 'admin.call'],
      ...['configuration.created', 'admin.call'],
      ...['user.disabled', 'admin.call'],
      ...['user.enabled', 'admin.call'],
      ...['configuration.deleted', 'admin.call'],
      ...['configuration.deleted', 'user.destroyed', 'admin.call'],
    ],
  );
  const deleted = seen[9];
  assert.ok(deleted?.type === 'configuration.deleted');
  assert.deepEqual(deleted.configuration, {
    userId: 'alice',
    profileId: 'employees',
    connectionId: first.connection_id,
    vpnProto: 'wireguard',
    nodeNumber: 0,
  });
});

test('a listener that fails inside the transaction rolls the change back: the call fails and nothing was stored', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  portal.portal.ctx.events.inTransaction(async (event) => {
    if (event.type === 'configuration.created') throw new Error('the audit log is unwritable');
  });
  const published: PortalEvent[] = [];
  portal.portal.ctx.events.afterCommit((event) => void published.push(event));
  const refused = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  assert.equal(refused.status, 500);
  assert.deepEqual(
    (await portal.get('/users')).json(),
    { users: [] },
    'neither the user nor the configuration was stored',
  );
  assert.equal(published.filter((event) => event.type === 'configuration.created').length, 0, 'nothing was announced');
});

test('a closing listener is told last: once per change, after every event and the call it ends with', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const order: string[] = [];
  const { events } = portal.portal.ctx;
  events.inTransaction(async (event) => {
    order.push(event.type);
  });
  events.closing((announced) => {
    order.push(`closing(${announced.map((event) => event.type).join(',')})`);
    return [];
  });
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  assert.equal((await portal.post('/destroy', { user_id: 'alice' })).status, 204);
  assert.deepEqual(
    order.filter((entry) => !entry.startsWith('node.')),
    [
      ...[
        'user.created',
        'configuration.created',
        'admin.call',
        'closing(user.created,configuration.created,admin.call)',
      ],
      ...[
        'configuration.deleted',
        'user.destroyed',
        'admin.call',
        'closing(configuration.deleted,user.destroyed,admin.call)',
      ],
    ],
  );
});

test('a closing write runs once per change, in its transaction: a create runs it in its last statement, and a create refused for a full pool leaves none', async (t) => {
  const portal = await startTestPortal({
    config: {
      ProfileList: [
        {
          profileId: 'lab',
          displayName: 'Lab',
          hostName: 'vpn.example.org',
          // A /30 holds one client.
          wRangeFour: '10.46.0.0/30',
          wRangeSix: 'fd46::/64',
          nodeUrl: 'http://127.0.0.1:2',
        },
      ],
    },
  });
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const told: string[] = [];
  // A second mover of the listing counter: each change that committed moves it twice.
  portal.portal.ctx.events.closing((announced) => {
    told.push(announced.map((event) => event.type).join(','));
    return [{ kind: 'listing-generation' }];
  });
  const before = Number(await readListingGeneration(db));
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'lab' })).status, 200);
  assert.equal(Number(await readListingGeneration(db)), before + 2, 'the create ran both moves');
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'lab' })).status, 503);
  assert.equal(Number(await readListingGeneration(db)), before + 2, "the refused create's moves rolled back with it");
  assert.equal((await portal.post('/destroy', { user_id: 'alice' })).status, 204);
  assert.equal(Number(await readListingGeneration(db)), before + 4);
  // On PostgreSQL bob's create is tried as one statement first, which gives up at the full pool
  // having written nothing, and is then made (and refused) in a transaction: each try is told.
  const bobsTries = isPostgres(db) ? 2 : 1;
  assert.deepEqual(told, [
    'user.created,configuration.created,admin.call',
    ...Array.from({ length: bobsTries }, () => 'user.created,configuration.created,admin.call'),
    'configuration.deleted,user.destroyed,admin.call',
  ]);
  const users = await db.selectFrom('users').select('user_id').execute();
  assert.deepEqual(users, [], 'bob was not made, alice destroyed');
});
