// The listing cache (src/core/listings/cache.ts): an unchanged listing is answered from memory,
// and nothing a user or an administrator does through the portal is ever missing from the next
// answer — on the instance that made the change, on another instance of the same database,
// and when a configuration expires with no change at all. To see the cache at work, a row is
// written behind the portal's back (as an administrator editing the database by hand would):
// it stays out of the users listing until the next change, which docs/admin-api-guide.md says;
// the connection listings follow the listing journal, which sees hand edits too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDatabaseLocation } from '../../../src/config/database-location.js';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { connectDatabase } from '../../../src/storage/database.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { ManualClock } from '../../support/admin-keys.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const config: Partial<PortalConfigFile> = {
  reconcileInterval: 'PT1H',
  supportedSessionExpiry: ['PT12H'],
  ProfileList: [
    {
      profileId: 'staff',
      displayName: 'Staff',
      hostName: 'vpn.example.org',
      wRangeFour: '10.48.0.0/24',
      wRangeSix: 'fd48::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
  ],
};

async function create(portal: TestPortal, userId: string, extra: Record<string, string> = {}): Promise<string> {
  const response = await portal.post('/create', { user_id: userId, profile_id: 'staff', ...extra });
  assert.equal(response.status, 200, response.text);
  return wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey);
}

async function listedUsers(portal: TestPortal): Promise<string[]> {
  const response = await portal.get('/users');
  assert.equal(response.status, 200, response.text);
  return (response.json() as { users: string[] }).users;
}

async function listedConnections(portal: TestPortal): Promise<string[]> {
  const response = await portal.get('/connection_list', { show_all: 'on' });
  assert.equal(response.status, 200, response.text);
  return (response.json() as { connection_list: { staff: { user_id: string }[] } }).connection_list.staff
    .map((entry) => entry.user_id)
    .sort();
}

async function connectedUsers(portal: TestPortal): Promise<string[]> {
  const response = await portal.get('/connected_users', { show_all: 'on' });
  assert.equal(response.status, 200, response.text);
  return [...(response.json() as { connected_users: { staff: string[] } }).connected_users.staff].sort();
}

/** Writes a user with one configuration straight into the database, as a hand edit would. */
async function writeBehindThePortal(
  portal: TestPortal,
  userId: string,
  poolIndex: number,
  expiresAt: string,
): Promise<void> {
  const db = connectDatabase(parseDatabaseLocation(portal.database, portal.dataDir));
  try {
    const now = '2026-01-01T00:00:00+00:00';
    await db
      .insertInto('users')
      .values({ user_id: userId, created_at: now, last_seen: now, auth_data: null })
      .execute();
    const key = Buffer.alloc(32, poolIndex).toString('base64');
    await db
      .insertInto('wg_peers')
      .values({
        public_key: key,
        user_id: userId,
        profile_id: 'staff',
        node_number: 0,
        display_name: 'Hand-made',
        ip_four: `10.48.0.${poolIndex + 2}`,
        ip_six: `fd48::${(poolIndex + 2).toString(16)}`,
        pool_index: poolIndex,
        created_at: now,
        expires_at: expiresAt,
        auth_key: null,
        revision: 1,
        expiry_warned: 0,
      })
      .execute();
  } finally {
    await db.destroy();
  }
}

test('an unchanged listing is answered from memory, and every change through the Admin API is in the next answer', async (t) => {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  await create(portal, 'ann');
  await create(portal, 'bob');
  assert.deepEqual(await listedUsers(portal), ['ann', 'bob']);
  assert.deepEqual(await listedConnections(portal), ['ann', 'bob']);
  assert.deepEqual(await connectedUsers(portal), ['ann', 'bob']);

  await writeBehindThePortal(portal, 'hand', 200, '2099-01-01T00:00:00+00:00');
  assert.deepEqual(await listedUsers(portal), ['ann', 'bob'], 'a hand edit is not seen: the listing came from memory');
  // The connection listings follow the listing journal, which SQLite's triggers write for every
  // writer; on PostgreSQL a create journals its configuration itself, so a hand insert is not seen.
  const journaled = portal.database.startsWith('sqlite') ? ['ann', 'bob', 'hand'] : ['ann', 'bob'];
  assert.deepEqual(await listedConnections(portal), journaled, 'a hand edit of configurations is journaled on SQLite');
  assert.deepEqual(await connectedUsers(portal), journaled);

  // Each call that changes users or configurations is in the very next listing.
  assert.equal((await portal.post('/disable_user', { user_id: 'bob' })).status, 204);
  assert.deepEqual(
    await listedConnections(portal),
    ['ann', 'hand'],
    'disable_user: bob is gone, and the cache was rebuilt',
  );
  assert.deepEqual(await connectedUsers(portal), ['ann', 'hand']);
  assert.deepEqual(await listedUsers(portal), ['ann', 'bob', 'hand']);
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: ['bob'] });

  assert.equal((await portal.post('/enable_user', { user_id: 'bob' })).status, 204);
  assert.deepEqual(await listedConnections(portal), ['ann', 'bob', 'hand'], 'enable_user');
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });

  const carol = await create(portal, 'carol');
  assert.deepEqual(await listedConnections(portal), ['ann', 'bob', 'carol', 'hand'], 'create');
  assert.deepEqual(await listedUsers(portal), ['ann', 'bob', 'carol', 'hand']);

  assert.equal((await portal.post('/delete_connection', { user_id: 'carol', connection_id: carol })).status, 204);
  assert.deepEqual(await listedConnections(portal), ['ann', 'bob', 'hand'], 'delete_connection');

  assert.equal((await portal.post('/destroy', { user_id: 'ann' })).status, 204);
  assert.deepEqual(await listedConnections(portal), ['bob', 'hand'], 'destroy');
  assert.deepEqual(await listedUsers(portal), ['bob', 'carol', 'hand']);
});

test('a change made through another portal instance on the same database is in the next answer of this one', async (t) => {
  const first = await startTestPortal({ config });
  t.after(() => first.close());
  const second = await startTestPortal({ config, dataDir: first.dataDir, database: first.database });
  t.after(() => second.close());

  await create(first, 'ann');
  assert.deepEqual(await listedConnections(first), ['ann']);
  assert.deepEqual(await listedUsers(first), ['ann']);

  await create(second, 'bob');
  assert.deepEqual(await listedConnections(first), ['ann', 'bob'], 'a create on the other instance');
  assert.deepEqual(await listedUsers(first), ['ann', 'bob']);

  assert.equal((await second.post('/disable_user', { user_id: 'ann' })).status, 204);
  assert.deepEqual(await listedConnections(first), ['bob'], 'a disable_user on the other instance');
  assert.deepEqual((await first.get('/disabled_users')).json(), { disabled_users: ['ann'] });
});

test('a configuration leaves a listing from memory at its expiry, with no change made', async (t) => {
  const clock = new ManualClock('2026-06-01T08:00:00Z');
  const portal = await startTestPortal({ config, clock });
  t.after(() => portal.close());
  await create(portal, 'ann', { expires_in: 'PT12H' });
  await writeBehindThePortal(portal, 'hand', 200, '2099-01-01T00:00:00+00:00');
  await create(portal, 'bob');
  assert.deepEqual(await listedConnections(portal), ['ann', 'bob', 'hand']);

  const pages = portal.portal.ctx.listings.pages;
  const built = pages.pagesBuilt;
  clock.advance(12 * 3600_000 - 1000);
  assert.deepEqual(await listedConnections(portal), ['ann', 'bob', 'hand']);
  assert.equal(pages.pagesBuilt, built, 'a second before the expiry: from memory');

  clock.advance(1000);
  assert.deepEqual(
    await listedConnections(portal),
    ['bob', 'hand'],
    'at the expiry the listing is built again, without ann',
  );
  assert.ok(pages.pagesBuilt > built);
});
