// A node that cannot be reached never fails an Admin API call: the change stays in the
// database and the reconcile pass applies it once the node answers again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { STALE_NODES_HEADER } from '../../../src/protocol/admin-api.js';
import { asNodeNumber, type WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';
import { bearer, makeAdminKey } from '../../support/admin-keys.js';

type ProfileFile = PortalConfigFile['ProfileList'][number];

const employees: ProfileFile = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
  defaultGateway: false,
};

/** The profile on node 0 (the real agent) and node 1, an address where nothing listens. */
function withUnreachableSecondNode(nodeUrl: string): Partial<PortalConfigFile> {
  return {
    ProfileList: [
      {
        ...employees,
        onNode: [0, 1],
        nodeUrl: [nodeUrl, UNREACHABLE_NODE],
        wRangeFour: ['10.44.0.0/24', '10.45.0.0/24'],
        wRangeSix: ['fd44::/64', 'fd45::/64'],
      },
    ],
  };
}

async function provision(portal: TestPortal, userId: string): Promise<{ key: string; address: string }> {
  const response = await portal.post('/create', { user_id: userId, profile_id: 'employees' });
  assert.equal(response.status, 200, response.text);
  const file = parseWireGuardFile(response.text);
  return {
    key: wireGuardPublicKey(file.interface.get('PrivateKey') as WireGuardKey),
    address: file.interface.get('Address') ?? '',
  };
}

test('while the node is down every call answers at once; when it is back the reconcile applies what changed', async (t) => {
  const lab = await startPortalWithNode({ config: (nodeUrl) => ({ ProfileList: [{ ...employees, nodeUrl }] }) });
  t.after(lab.close);
  const { portal } = lab;
  const alice = await provision(portal, 'alice');
  const bob = await provision(portal, 'bob');
  assert.deepEqual(
    [...(await lab.peersOnNode()).keys()].sort(),
    [alice.key, bob.key].sort(),
    'both devices are on the node',
  );

  await lab.stopAgent();
  const started = Date.now();
  const carol = await provision(portal, 'carol');
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.equal((await portal.post('/delete_connection', { user_id: 'bob', connection_id: bob.key })).status, 204);
  const online = await portal.get('/connection_list');
  assert.equal(online.status, 200, online.text);
  assert.deepEqual(online.json(), { connection_list: { employees: [] } });
  assert.ok(Date.now() - started < 5_000, `calls during the outage took ${Date.now() - started} ms in all`);

  // The node comes back empty; the reconcile pass gives it exactly what the database says.
  await lab.startAgent();
  await portal.reconcile();
  assert.deepEqual([...(await lab.peersOnNode()).keys()], [carol.key], 'only carol: alice is disabled and bob deleted');

  // Later changes reach the node at once again.
  assert.equal((await portal.post('/enable_user', { user_id: 'alice' })).status, 204);
  assert.deepEqual([...(await lab.peersOnNode()).keys()].sort(), [alice.key, carol.key].sort(), 'alice is back');
});

test('create prefers a node that answers over one that failed, whatever the shuffle says', async (t) => {
  // Node 0 is the real agent, node 1 an address where nothing listens. With random() = 0 the
  // shuffle always puts node 1 first; the portal's start-up reconcile found it unreachable.
  const lab = await startPortalWithNode({ random: () => 0, config: withUnreachableSecondNode });
  t.after(lab.close);

  const first = await provision(lab.portal, 'alice');
  const second = await provision(lab.portal, 'bob');
  assert.match(first.address, /^10\.44\.0\.2\/24,/, 'the first configuration is on node 0, which answers');
  assert.match(second.address, /^10\.44\.0\.3\/24,/, 'and so is the next');
  assert.deepEqual(
    [...(await lab.peersOnNode()).keys()].sort(),
    [first.key, second.key].sort(),
    'their peers are on node 0 at once',
  );
});

test('a listing waits for no node that failed, and names a node that never answered in VPN-Portal-Stale-Nodes', async (t) => {
  const lab = await startPortalWithNode({ config: withUnreachableSecondNode });
  t.after(lab.close);
  const { portal } = lab;
  assert.ok(portal.portal.ctx.nodes.isDown(asNodeNumber(1)), 'the start-up pass found node 1 unreachable');

  for (const path of ['/connection_list', '/connected_users']) {
    const listed = await portal.get(path);
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.headers.get(STALE_NODES_HEADER), '1', `${path}: node 1 is not in this answer`);
  }
  // show_all=on of a WireGuard profile is the database's view: no node's answer is missing from it.
  const all = await portal.get('/connection_list', { show_all: 'on' });
  assert.equal(all.headers.get(STALE_NODES_HEADER), null);

  // Node 0 stops (refusing connections): both are named, in order.
  await lab.stopAgent();
  const both = await portal.get('/connected_users');
  assert.equal(both.headers.get(STALE_NODES_HEADER), '0,1', 'comma-separated, in order');
  assert.equal(both.status, 200);
});

test('a key limited to one profile is told of no stale node that serves only another profile', async (t) => {
  // Employees on node 0 (the real agent), guests on node 1, where nothing listens.
  const lab = await startPortalWithNode({
    config: (nodeUrl) => ({
      ProfileList: [
        { ...employees, nodeUrl },
        {
          ...employees,
          profileId: 'guests',
          displayName: 'Guests',
          onNode: [1],
          nodeUrl: UNREACHABLE_NODE,
          wRangeFour: '10.46.0.0/24',
          wRangeSix: 'fd46::/64',
        },
      ],
    }),
  });
  t.after(lab.close);
  const { portal } = lab;
  assert.ok(portal.portal.ctx.nodes.isDown(asNodeNumber(1)), 'the start-up pass found node 1 unreachable');
  const everything = await portal.get('/connection_list');
  assert.equal(everything.headers.get(STALE_NODES_HEADER), '1', 'a key for every profile is told');

  const desk = await makeAdminKey(portal, 'employees-desk', { scope: 'read', profiles: ['employees'] });
  for (const path of ['/connection_list', '/connected_users']) {
    const limited = await portal.get(path, {}, bearer(desk));
    assert.equal(limited.status, 200, limited.text);
    assert.equal(limited.headers.get(STALE_NODES_HEADER), null, `${path}: node 1 serves no profile of the key`);
  }
  // Node 0 stops: it serves the key's profile, so the key is told of it, and of it only.
  await lab.stopAgent();
  const own = await portal.get('/connected_users', {}, bearer(desk));
  assert.equal(own.headers.get(STALE_NODES_HEADER), '0');
});
