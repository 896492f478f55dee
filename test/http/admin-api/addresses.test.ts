// Client addresses handed out by create: never twice, even under 200 concurrent requests;
// a full pool answers 503 and leaves nothing behind; deleted configurations give their
// address back and the lowest free one is reused first (reference §6.2).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseIpAddress, parseIpPrefix, prefixContainsAddress } from '../../../src/net/ip-prefix.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import type { NodeNumber, WireGuardKey } from '../../../src/shared/ids.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const SMALL_POOL = {
  ProfileList: [
    {
      profileId: 'lab',
      displayName: 'Lab',
      hostName: 'vpn.example.org',
      // A /29 holds 8 addresses: network, gateway (.1) and broadcast are never handed out, so 5 clients: .2 to .6.
      wRangeFour: '10.45.0.0/29',
      wRangeSix: 'fd45::/64',
      nodeUrl: 'http://127.0.0.1:2',
    },
  ],
};

interface Issued {
  readonly ipFour: string;
  readonly ipSix: string;
  readonly connectionId: string;
}

async function createFor(portal: TestPortal, userId: string, profileId: string): Promise<Issued> {
  const response = await portal.post('/create', { user_id: userId, profile_id: profileId });
  assert.equal(response.status, 200, response.text);
  const file = parseWireGuardFile(response.text);
  const [four = '', six = ''] = (file.interface.get('Address') ?? '').split(',');
  return {
    ipFour: four.split('/')[0] ?? '',
    ipSix: six.split('/')[0] ?? '',
    connectionId: wireGuardPublicKey(file.interface.get('PrivateKey') as WireGuardKey),
  };
}

test('200 parallel creates get 200 distinct IPv4 and 200 distinct IPv6 addresses, all inside the ranges', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const issued = await Promise.all(
    Array.from({ length: 200 }, (_, index) => createFor(portal, `device-${index % 20}`, 'employees')),
  );

  const four = new Set(issued.map((entry) => entry.ipFour));
  const six = new Set(issued.map((entry) => entry.ipSix));
  assert.equal(four.size, 200);
  assert.equal(six.size, 200);
  const rangeFour = parseIpPrefix('10.44.0.0/24');
  const rangeSix = parseIpPrefix('fd44::/64');
  for (const entry of issued) {
    assert.ok(prefixContainsAddress(rangeFour, parseIpAddress(entry.ipFour)), entry.ipFour);
    assert.ok(prefixContainsAddress(rangeSix, parseIpAddress(entry.ipSix)), entry.ipSix);
    assert.notEqual(entry.ipFour, '10.44.0.0');
    assert.notEqual(entry.ipFour, '10.44.0.1');
    assert.notEqual(entry.ipFour, '10.44.0.255');
    // IPv4 and IPv6 are paired one to one: network + k in both families.
    assert.equal(entry.ipSix, `fd44::${Number(entry.ipFour.split('.')[3]).toString(16)}`);
  }
  // Exactly the first 200 addresses of the pool, .2 to .201.
  const lastOctets = [...four].map((address) => Number(address.split('.')[3])).sort((a, b) => a - b);
  assert.deepEqual(
    lastOctets,
    Array.from({ length: 200 }, (_, index) => index + 2),
  );

  const connections = (await portal.admin.connectionList(true))['employees'] ?? [];
  assert.equal(connections.length, 200);
  assert.equal(new Set(connections.map((entry) => entry.ip_list[0])).size, 200);
});

test('a full pool answers 503 and leaves neither the new user nor a configuration behind', async (t) => {
  const portal = await startTestPortal({ config: SMALL_POOL });
  t.after(() => portal.close());

  const issued: Issued[] = [];
  for (let index = 0; index < 5; index++) issued.push(await createFor(portal, `device-${index}`, 'lab'));
  assert.deepEqual(
    issued.map((entry) => entry.ipFour),
    ['10.45.0.2', '10.45.0.3', '10.45.0.4', '10.45.0.5', '10.45.0.6'],
  );

  const full = await portal.post('/create', { user_id: 'device-5', profile_id: 'lab' });
  assert.equal(full.status, 503);
  assert.match(full.headers.get('content-type') ?? '', /^application\/json/);
  assert.match(errorBody(full.text), /no free client address/);

  // The request's new user was not left behind, and nothing else changed.
  const users = { users: await portal.admin.users() };
  assert.deepEqual(users.users, ['device-0', 'device-1', 'device-2', 'device-3', 'device-4']);
  const missing = await portal.get('/user_configuration_list', { user_id: 'device-5' });
  assert.equal(missing.status, 400);
  assert.equal(errorBody(missing.text), 'user does not exist');
  const peers = await portal.portal.ctx.db.selectFrom('wg_peers').select('ip_four').execute();
  assert.equal(peers.length, 5);

  // An existing user asking for one more configuration is refused the same way and keeps its own.
  const existing = await portal.post('/create', { user_id: 'device-0', profile_id: 'lab' });
  assert.equal(existing.status, 503);
  const kept = { user_configuration_list: await portal.admin.userConfigurationList('device-0') };
  assert.equal(kept.user_configuration_list.length, 1);
});

test('a deleted configuration gives its address back, and the lowest free address is handed out first', async (t) => {
  const portal = await startTestPortal({ config: SMALL_POOL });
  t.after(() => portal.close());

  const issued: Issued[] = [];
  for (let index = 0; index < 5; index++) issued.push(await createFor(portal, 'alice', 'lab'));
  const [first, , third] = issued as [Issued, Issued, Issued, Issued, Issued];

  // The administrator deletes the configurations at .4 and then .2.
  for (const entry of [third, first]) {
    const deleted = await portal.post('/delete_connection', { user_id: 'alice', connection_id: entry.connectionId });
    assert.equal(deleted.status, 204);
  }

  // The pool was full; now .2 comes back first (network + 2), then .4, then it is full again.
  const next = await createFor(portal, 'bob', 'lab');
  assert.deepEqual([next.ipFour, next.ipSix], ['10.45.0.2', 'fd45::2']);
  const after = await createFor(portal, 'bob', 'lab');
  assert.deepEqual([after.ipFour, after.ipSix], ['10.45.0.4', 'fd45::4']);
  const full = await portal.post('/create', { user_id: 'bob', profile_id: 'lab' });
  assert.equal(full.status, 503);
});

test('destroying a user gives all of its addresses back', async (t) => {
  const portal = await startTestPortal({ config: SMALL_POOL });
  t.after(() => portal.close());

  await createFor(portal, 'alice', 'lab');
  await createFor(portal, 'bob', 'lab');
  await createFor(portal, 'alice', 'lab');
  assert.equal((await portal.post('/destroy', { user_id: 'alice' })).status, 204);

  const reused = [
    await createFor(portal, 'carol', 'lab'),
    await createFor(portal, 'carol', 'lab'),
    await createFor(portal, 'carol', 'lab'),
  ];
  assert.deepEqual(
    reused.map((entry) => entry.ipFour),
    ['10.45.0.2', '10.45.0.4', '10.45.0.5'],
  );
});

test("when one node's pool is full the next node of the profile is used; each file names its node and range", async (t) => {
  const portal = await startTestPortal({
    random: () => 0,
    config: {
      ProfileList: [
        {
          profileId: 'lab',
          displayName: 'Lab',
          onNode: [0, 1],
          hostName: ['a.example.org', 'b.example.org'],
          nodeUrl: ['http://127.0.0.1:2', 'http://127.0.0.1:2'],
          // A /30 holds exactly one client per node.
          wRangeFour: ['10.47.0.0/30', '10.47.1.0/30'],
          wRangeSix: ['fd47::/126', 'fd47:1::/126'],
        },
      ],
    },
  });
  t.after(() => portal.close());

  const files: string[] = [];
  for (const userId of ['alice', 'bob']) {
    const response = await portal.post('/create', { user_id: userId, profile_id: 'lab' });
    assert.equal(response.status, 200, response.text);
    const file = parseWireGuardFile(response.text);
    files.push(`${file.peer.get('Endpoint')} ${file.interface.get('Address')}`);
  }
  assert.deepEqual(files.sort(), [
    'a.example.org:51820 10.47.0.2/30,fd47::2/126',
    'b.example.org:51820 10.47.1.2/30,fd47:1::2/126',
  ]);
  // Each node's public key is its own.
  const keys = portal.portal.ctx.keys;
  assert.notEqual(keys.wireGuardPublicKey(0 as NodeNumber), keys.wireGuardPublicKey(1 as NodeNumber));

  const full = await portal.post('/create', { user_id: 'carol', profile_id: 'lab' });
  assert.equal(full.status, 503);
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice', 'bob'] });
});

test('after a range change, an address still held by a configuration from before is skipped, not handed out twice', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-range-change-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const before = await startTestPortal({ dataDir, config: SMALL_POOL });
  const old = await createFor(before, 'ann', 'lab');
  await before.close();

  // The /29 grows to a /28: a new pool, whose first addresses include the one ann holds.
  const after = await startTestPortal({
    dataDir,
    config: { ProfileList: SMALL_POOL.ProfileList.map((profile) => ({ ...profile, wRangeFour: '10.45.0.0/28' })) },
  });
  t.after(() => after.close());
  const issued = [];
  for (const user of ['bob', 'carol', 'dave']) issued.push(await createFor(after, user, 'lab'));
  const fours = [old.ipFour, ...issued.map((entry) => entry.ipFour)];
  assert.equal(new Set(fours).size, fours.length, `distinct IPv4 addresses: ${fours.join(', ')}`);
  assert.equal(
    issued.some((entry) => entry.ipFour === old.ipFour),
    false,
    `${old.ipFour} stays ann's`,
  );
  const listed = (await after.admin.connectionList(true)).lab ?? [];
  assert.equal(listed.length, 4, 'ann and the three new configurations');
});
