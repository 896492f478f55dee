// What an administrator sees in connected_users and connection_list: every profile as a key,
// connections with exactly the fields of specification §2.3, the show_all switch, and expired
// configurations disappearing. The 3-minute online rule of show_all=off needs a real
// handshake: test/e2e/wireguard-tunnel.test.ts checks it with a device in a network namespace.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Clock } from '../../../src/shared/time.js';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

function twoProfiles(nodeUrl: string): Partial<PortalConfigFile> {
  return {
    supportedSessionExpiry: ['PT12H'],
    ProfileList: [
      {
        profileId: 'employees',
        displayName: 'Employees',
        hostName: 'vpn.example.org',
        wRangeFour: '10.44.0.0/24',
        wRangeSix: 'fd44::/64',
        nodeUrl,
      },
      {
        profileId: 'guests',
        displayName: 'Guests',
        hostName: 'vpn.example.org',
        wRangeFour: '10.46.0.0/24',
        wRangeSix: 'fd46::/64',
        nodeUrl,
      },
    ],
  };
}

/** A clock the test moves by hand. */
function manualClock(start: string): Clock & { advance(ms: number): void } {
  let now = new Date(start).getTime();
  return {
    now: () => new Date(now),
    advance: (ms) => {
      now += ms;
    },
  };
}

async function provision(
  portal: TestPortal,
  userId: string,
  profileId: string,
  extra: Record<string, string> = {},
): Promise<string> {
  const response = await portal.post('/create', { user_id: userId, profile_id: profileId, ...extra });
  assert.equal(response.status, 200, response.text);
  return wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey);
}

interface Connection {
  user_id: string;
  connection_id: string;
  display_name: string;
  ip_list: string[];
  vpn_proto: string;
  auth_key: string | null;
}

async function connectionList(
  portal: TestPortal,
  query: Record<string, string> = {},
): Promise<Record<string, Connection[]>> {
  const response = await portal.get('/connection_list', query);
  assert.equal(response.status, 200, response.text);
  const body = response.json() as { connection_list: Record<string, Connection[]> };
  assert.deepEqual(Object.keys(body), ['connection_list']);
  return body.connection_list;
}

async function connectedUsers(
  portal: TestPortal,
  query: Record<string, string> = {},
): Promise<Record<string, string[]>> {
  const response = await portal.get('/connected_users', query);
  assert.equal(response.status, 200, response.text);
  const body = response.json() as { connected_users: Record<string, string[]> };
  assert.deepEqual(Object.keys(body), ['connected_users']);
  return body.connected_users;
}

const ids = (list: readonly Connection[] | undefined) => (list ?? []).map((entry) => entry.connection_id).sort();

test('with nothing provisioned every configured profile is a key with an empty array', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles(UNREACHABLE_NODE) });
  t.after(() => portal.close());

  for (const query of [{}, { show_all: 'on' }, { show_all: 'off' }] as Record<string, string>[]) {
    assert.deepEqual(await connectionList(portal, query), { employees: [], guests: [] });
    assert.deepEqual(await connectedUsers(portal, query), { employees: [], guests: [] });
  }
  // The raw text too: arrays, never objects.
  const raw = await portal.get('/connected_users', { show_all: 'on' });
  assert.equal(raw.text, '{"connected_users":{"employees":[],"guests":[]}}');
});

test('show_all accepts only "on" and "off"', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles(UNREACHABLE_NODE) });
  t.after(() => portal.close());

  for (const path of ['/connection_list', '/connected_users']) {
    for (const value of ['yes', 'no', 'ON', 'Off', 'true', '1', '']) {
      const response = await portal.get(path, { show_all: value });
      assert.equal(response.status, 400, `${path} show_all=${value}`);
      assert.equal(errorBody(response.text), 'invalid value for "show_all"');
    }
    const repeated = await portal.request(`${path}?show_all=on&show_all=off`, {
      headers: { authorization: `Bearer ${portal.secret}` },
    });
    assert.equal(repeated.status, 400);
    assert.equal(errorBody(repeated.text), 'value of query parameter "show_all" MUST be string');
  }
});

test('show_all=on lists every active configuration with exactly the fields of the specification', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles(UNREACHABLE_NODE) });
  t.after(() => portal.close());

  const laptop = await provision(portal, 'alice', 'employees', { display_name: 'Laptop' });
  const guest = await provision(portal, 'bob', 'guests', { display_name: 'Visitor' });

  const lists = await connectionList(portal, { show_all: 'on' });
  assert.deepEqual(Object.keys(lists).sort(), ['employees', 'guests']);
  assert.deepEqual(lists['employees'], [
    {
      user_id: 'alice',
      connection_id: laptop,
      display_name: 'Laptop',
      ip_list: ['10.44.0.2', 'fd44::2'],
      vpn_proto: 'wireguard',
      auth_key: null,
    },
  ]);
  assert.deepEqual(lists['guests'], [
    {
      user_id: 'bob',
      connection_id: guest,
      display_name: 'Visitor',
      ip_list: ['10.46.0.2', 'fd46::2'],
      vpn_proto: 'wireguard',
      auth_key: null,
    },
  ]);
  for (const entry of Object.values(lists).flat()) {
    assert.deepEqual(Object.keys(entry).sort(), [
      'auth_key',
      'connection_id',
      'display_name',
      'ip_list',
      'user_id',
      'vpn_proto',
    ]);
    assert.equal(typeof entry.user_id, 'string');
    assert.equal(typeof entry.connection_id, 'string');
    assert.equal(typeof entry.display_name, 'string');
    assert.ok(
      Array.isArray(entry.ip_list) && entry.ip_list.every((ip) => typeof ip === 'string'),
      `ip_list is an array of strings: ${JSON.stringify(entry.ip_list)}`,
    );
    assert.equal(entry.vpn_proto, 'wireguard');
    assert.equal(entry.auth_key, null);
  }
});

test('a user with several configurations in one profile is one connected user there; every profile counts separately', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles(UNREACHABLE_NODE) });
  t.after(() => portal.close());

  await provision(portal, 'alice', 'employees');
  await provision(portal, 'bob', 'employees');
  await provision(portal, 'alice', 'employees');
  await provision(portal, 'alice', 'guests');
  await provision(portal, 'alice', 'employees');

  const users = await connectedUsers(portal, { show_all: 'on' });
  assert.deepEqual(Object.keys(users).sort(), ['employees', 'guests']);
  assert.deepEqual([...(users['employees'] ?? [])].sort(), ['alice', 'bob']);
  assert.deepEqual(users['guests'], ['alice']);
  // Arrays, even when a duplicate came first (the reference could emit an object here).
  assert.ok(Array.isArray(users['employees']), `an array, not ${JSON.stringify(users['employees'])}`);

  const lists = await connectionList(portal, { show_all: 'on' });
  assert.equal(lists['employees']?.length, 4);
  assert.equal(lists['guests']?.length, 1);
});

test('show_all=off (the default) while the node cannot be reached answers 200 with empty lists', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles(UNREACHABLE_NODE) });
  t.after(() => portal.close());
  await provision(portal, 'alice', 'employees');
  await provision(portal, 'bob', 'guests');

  for (const query of [{}, { show_all: 'off' }] as Record<string, string>[]) {
    assert.deepEqual(await connectionList(portal, query), { employees: [], guests: [] });
    assert.deepEqual(await connectedUsers(portal, query), { employees: [], guests: [] });
  }
  // The configurations are still there.
  assert.equal((await connectionList(portal, { show_all: 'on' }))['employees']?.length, 1);
});

test('expired configurations disappear from the listings, and the reconcile pass deletes them', async (t) => {
  const clock = manualClock('2026-01-31T10:00:00Z');
  const { portal, peersOnNode, close } = await startPortalWithNode({ clock, config: twoProfiles });
  t.after(close);
  const peerKeys = async () => [...(await peersOnNode()).keys()].sort();

  const shortLived = await provision(portal, 'alice', 'employees', { expires_in: 'PT12H' });
  const longLived = await provision(portal, 'alice', 'employees');
  const guest = await provision(portal, 'bob', 'guests', { expires_in: 'PT12H' });
  assert.equal((await connectionList(portal, { show_all: 'on' }))['employees']?.length, 2);

  // One second before expiry everything is still there.
  clock.advance(12 * 3600 * 1000 - 1000);
  assert.deepEqual(
    ids((await connectionList(portal, { show_all: 'on' }))['employees']),
    [shortLived, longLived].sort(),
  );

  // At the expiry time the 12-hour configurations are gone from the listings.
  clock.advance(1000);
  assert.deepEqual(ids((await connectionList(portal, { show_all: 'on' }))['employees']), [longLived]);
  assert.deepEqual(await connectedUsers(portal, { show_all: 'on' }), { employees: ['alice'], guests: [] });
  // Until the reconcile pass their peers are still on the node.
  assert.deepEqual(await peerKeys(), [shortLived, longLived, guest].sort());

  // The reconcile pass deletes them from the database and from the node, and frees their addresses.
  await portal.portal.reconcileNow();
  const rows = await portal.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute();
  assert.deepEqual(
    rows.map((row) => row.public_key),
    [longLived],
  );
  const configurations = await portal.admin.userConfigurationList('alice');
  assert.deepEqual(
    configurations.map((entry) => entry.connection_id),
    [longLived],
  );
  assert.deepEqual(await peerKeys(), [longLived]);
  // The user whose only configuration expired still exists.
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice', 'bob'] });

  const next = await portal.post('/create', { user_id: 'carol', profile_id: 'employees' });
  assert.equal(parseWireGuardFile(next.text).interface.get('Address'), '10.44.0.2/24,fd44::2/64');
});
