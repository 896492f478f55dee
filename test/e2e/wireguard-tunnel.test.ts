// The whole path with standard WireGuard tooling: the portal runs on the host, the node agent
// (with wireguard-go) in namespace "node", a managed device in namespace "client". An
// administrator creates a configuration through the Admin API, the device brings it up with
// wg-quick and reaches the node through the tunnel; disabling, enabling, deleting and
// destroying change what passes, and a restarted node agent gets its peers back. The portal
// lists the device as connected until exactly 3 minutes after the handshake the node reports.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { peerListSchema, VPN_DAEMON_PATHS } from '../../src/protocol/vpn-daemon.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';

describe('a managed device reaches the node through a WireGuard tunnel made by the portal', () => {
  let lab: TunnelLab;
  /** The portal's clock: the real time unless a test pins it. */
  let pinnedNow: Date | null = null;
  /** The device's configuration currently up. */
  let device: { interfaceName: string; publicKey: string; file: string } | null = null;

  const assertPingPasses = async (why: string): Promise<void> => {
    // Up to 30 s: after the node lost and regained the peer, the device starts a new handshake
    // only once its old session has gone unanswered for 15 s.
    assert.ok(await lab.ping(30), why);
  };
  const assertPingFails = async (why: string): Promise<void> => {
    assert.equal(await lab.ping(3), false, why);
  };
  const listedIds = async (showAll = false) =>
    ((await lab.portal.admin.connectionList(showAll))[LAB_PROFILE] ?? []).map((entry) => entry.connection_id);
  /** The handshake time the node reports for a peer, read with the node key as the portal does. */
  const lastHandshakeOnNode = async (publicKey: string): Promise<Date> => {
    const response = await fetch(`${lab.nodeUrl}${VPN_DAEMON_PATHS.peerList}?show_all=yes`, {
      headers: { authorization: `Bearer ${lab.portal.portal.ctx.keys.nodeSecret(asNodeNumber(0))}` },
    });
    assert.equal(response.status, 200, 'the node lists its peers');
    const { peer_list: peers } = peerListSchema.parse(await response.json());
    const time = peers.find((peer) => peer.public_key === publicKey)?.last_handshake_time;
    assert.ok(typeof time === 'string', `the node reports a handshake of ${publicKey}: ${JSON.stringify(peers)}`);
    return new Date(time);
  };

  before(async () => {
    lab = await startTunnelLab({
      clock: { now: () => pinnedNow ?? new Date() },
      portalConfig: { reconcileInterval: 'PT3S' },
    });
  });

  after(async () => {
    await lab?.close();
  });

  test('the device brings up the file from /create and its pings to the node come back', async () => {
    device = await lab.provisionDevice('alice', 'Laptop');
    await assertPingPasses('ping through a fresh tunnel');
  });

  test('the portal lists the connected user and the connection with its details', async () => {
    assert.ok(device !== null, 'a device is up');
    assert.deepEqual(await lab.portal.admin.connectedUsers(), { [LAB_PROFILE]: ['alice'] });

    const connections = (await lab.portal.admin.connectionList())[LAB_PROFILE] ?? [];
    assert.equal(connections.length, 1);
    const [connection] = connections;
    assert.equal(connection?.connection_id, device.publicKey);
    assert.equal(connection?.display_name, 'Laptop');
    assert.equal(connection?.user_id, 'alice');
    assert.equal(connection?.vpn_proto, 'wireguard');
    const addresses = (
      await lab.client.exec('ip', ['-o', 'address', 'show', 'dev', device.interfaceName, 'scope', 'global'])
    ).stdout;
    for (const ip of connection?.ip_list ?? []) assert.ok(addresses.includes(ip), `the device has address ${ip}`);
    assert.equal(connection?.ip_list.length, 2);
  });

  test('the portal lists the connection until exactly 3 minutes after the handshake the node reports', async () => {
    assert.ok(device !== null, 'a device is up');
    const handshake = await lastHandshakeOnNode(device.publicKey);
    try {
      pinnedNow = new Date(handshake.getTime() + 179_000);
      assert.deepEqual(await listedIds(), [device.publicKey], '179 s after the handshake the device is listed');
      assert.deepEqual(await lab.portal.admin.connectedUsers(), { [LAB_PROFILE]: ['alice'] });
      pinnedNow = new Date(handshake.getTime() + 180_000);
      assert.deepEqual(await listedIds(), [], '180 s after the handshake it is not');
      assert.deepEqual(await lab.portal.admin.connectedUsers(), { [LAB_PROFILE]: [] });
      // show_all=on lists configurations, whatever their handshakes.
      assert.deepEqual(await listedIds(true), [device.publicKey]);
    } finally {
      pinnedNow = null;
    }
  });

  test('disabling the user cuts the tunnel and empties both lists', async () => {
    await lab.portal.admin.disableUser('alice');
    await assertPingFails('no reply for a disabled user');
    assert.deepEqual(await lab.portal.admin.connectedUsers(), { [LAB_PROFILE]: [] });
    assert.deepEqual(await lab.portal.admin.connectionList(), { [LAB_PROFILE]: [] });
  });

  test('enabling the user lets the same configuration pass again', async () => {
    await lab.portal.admin.enableUser('alice');
    await assertPingPasses('the same tunnel works after enable_user');
    assert.deepEqual(await lab.portal.admin.connectedUsers(), { [LAB_PROFILE]: ['alice'] });
  });

  test('a node agent restarted mid-way gets its peers back from the portal', async () => {
    await lab.stopAgent();
    await assertPingFails('no reply while the node agent is down');
    await lab.startAgent();
    await assertPingPasses('the reconciled peer passes again');
  });

  test('deleting the connection ends it for good', async () => {
    assert.ok(device !== null, 'a device is up');
    await lab.portal.admin.deleteConnection('alice', device.publicKey);
    await assertPingFails('no reply after delete_connection');
    assert.deepEqual(await lab.portal.admin.connectionList(), { [LAB_PROFILE]: [] });
    await lab.client.exec('wg-quick', ['down', device.file]);
    device = null;
  });

  test('destroying the user ends a new configuration too and removes the user', async () => {
    device = await lab.provisionDevice('alice', 'Phone');
    await assertPingPasses('ping through the second configuration');

    await lab.portal.admin.destroy('alice');
    await assertPingFails('no reply after destroy');
    assert.deepEqual(await lab.portal.admin.users(), []);
    assert.deepEqual(await lab.portal.admin.connectionList(), { [LAB_PROFILE]: [] });
  });
});
