// The whole path with standard WireGuard tooling: the portal runs on the host, the node agent
// (with wireguard-go) in namespace "node", a managed device in namespace "client". An
// administrator creates a configuration through the Admin API, the device brings it up with
// wg-quick and reaches the node through the tunnel; disabling, enabling, deleting and
// destroying change what passes, and a restarted node agent gets its peers back. The portal
// lists the device as connected until exactly 3 minutes after the handshake the node reports.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { asNodeNumber } from '../../src/shared/ids.js';
import { NetnsLab, type Namespace } from '../support/netns.js';
import { NodeAgentProcess } from '../support/node-agent-process.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

const PROFILE = 'employees';
const GATEWAY = '198.19.44.1';

interface ConnectionEntry {
  connection_id: string;
  display_name: string;
  ip_list: string[];
  user_id: string;
  vpn_proto: string;
}

describe('a managed device reaches the node through a WireGuard tunnel made by the portal', () => {
  const lab = new NetnsLab();
  let directory: string;
  let node: Namespace;
  let client: Namespace;
  let portal: TestPortal;
  let agentConfigFile: string;
  let agent: NodeAgentProcess;
  let nodeUrl: string;
  /** The portal's clock: the real time unless a test pins it. */
  let pinnedNow: Date | null = null;
  /** The client interface currently up, with the public key of its configuration. */
  let device: { interfaceName: string; publicKey: string } | null = null;

  /** Pings the node's tunnel address; `seconds` is how long to keep trying for one reply. */
  const ping = (seconds: number) => client.run('ping', ['-c', '1', '-i', '0.5', '-w', String(seconds), GATEWAY]);
  const assertPingPasses = async (why: string): Promise<void> => {
    // Up to 30 s: after the node lost and regained the peer, the device starts a new handshake
    // only once its old session has gone unanswered for 15 s.
    const result = await ping(30);
    assert.equal(result.exitCode, 0, `${why}: ${result.stdout}${result.stderr}`);
  };
  const assertPingFails = async (why: string): Promise<void> => {
    assert.notEqual((await ping(3)).exitCode, 0, why);
  };
  const assertSuccess = (response: { status: number; text: string }): void => {
    assert.ok(response.status >= 200 && response.status < 300, `expected success, got ${response.status} ${response.text}`);
  };
  const connectedUsers = async () => (await portal.get('/connected_users')).json() as { connected_users: Record<string, string[]> };
  const connectionList = async () => (await portal.get('/connection_list')).json() as { connection_list: Record<string, ConnectionEntry[]> };
  /** The handshake time the node reports for a peer, read with the node key as the portal does. */
  const lastHandshakeOnNode = async (publicKey: string): Promise<Date> => {
    const response = await fetch(`${nodeUrl}/w/peer_list?show_all=yes`, {
      headers: { authorization: `Bearer ${portal.portal.ctx.keys.nodeSecret(asNodeNumber(0))}` },
    });
    assert.equal(response.status, 200, 'the node lists its peers');
    const { peer_list: peers } = (await response.json()) as { peer_list: { public_key: string; last_handshake_time?: string }[] };
    const time = peers.find((peer) => peer.public_key === publicKey)?.last_handshake_time;
    assert.ok(time !== undefined, `the node reports a handshake of ${publicKey}: ${JSON.stringify(peers)}`);
    return new Date(time);
  };

  const startAgent = async (): Promise<NodeAgentProcess> => {
    const started = new NodeAgentProcess(node, agentConfigFile);
    await started.ready();
    return started;
  };

  /** POST /create as WireGuard file, then wg-quick up in the client namespace. */
  const provisionDevice = async (displayName: string): Promise<string> => {
    const created = await portal.post(
      '/create',
      { user_id: 'alice', profile_id: PROFILE, display_name: displayName },
      { accept: 'application/x-wireguard-profile' },
    );
    assert.equal(created.status, 200, created.text);
    const interfaceName = lab.interfaceName('wgc');
    const file = join(directory, `${interfaceName}.conf`);
    await writeFile(file, created.text, { mode: 0o600 });
    await client.exec('wg-quick', ['up', file], { env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' } });
    const publicKey = (await client.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim();
    device = { interfaceName, publicKey };
    return publicKey;
  };

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'wireguard-tunnel-e2e-'));
    node = await lab.namespace('node');
    client = await lab.namespace('client');
    const hostLink = lab.subnet();
    const clientLink = lab.subnet();
    await lab.vethPair({ namespace: null, address: `${hostLink.first}/30` }, { namespace: node, address: `${hostLink.second}/30` });
    await lab.vethPair({ namespace: node, address: `${clientLink.first}/30` }, { namespace: client, address: `${clientLink.second}/30` });

    nodeUrl = `http://${hostLink.second}:41194`;
    portal = await startTestPortal({
      clock: { now: () => pinnedNow ?? new Date() },
      config: {
        // Reachable from the node's namespace; the Admin API accepts the test on that address.
        listen: { host: hostLink.first, port: 0 },
        adminApi: { allowList: [`${hostLink.first}/32`], trustedProxyList: [] },
        reconcileInterval: 'PT3S',
        ProfileList: [
          {
            profileId: PROFILE,
            displayName: 'Employees',
            hostName: clientLink.first,
            defaultGateway: false,
            wRangeFour: '198.19.44.0/24',
            wRangeSix: 'fd00:44::/64',
            nodeUrl,
          },
        ],
      },
    });

    agentConfigFile = join(directory, 'node.json');
    await writeFile(
      agentConfigFile,
      JSON.stringify({
        apiUrl: `${portal.portal.url}${portal.portal.ctx.config.basePath}/node-api.php`,
        nodeNumber: 0,
        nodeKeyFile: portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)),
        listen: { host: hostLink.second, port: 41194 },
        WireGuard: { interfaceName: lab.interfaceName('wgn'), endpointFile: join(directory, 'endpoints.json') },
      }),
    );
    agent = await startAgent();
  });

  after(async () => {
    try {
      await agent?.stop();
    } finally {
      await lab.cleanup();
      await portal?.close();
      await rm(directory, { recursive: true, force: true });
    }
  });

  test('the device brings up the file from /create and its pings to the node come back', async () => {
    await provisionDevice('Laptop');
    await assertPingPasses('ping through a fresh tunnel');
  });

  test('the portal lists the connected user and the connection with its details', async () => {
    assert.ok(device !== null, 'a device is up');
    assert.deepEqual((await connectedUsers()).connected_users, { [PROFILE]: ['alice'] });

    const connections = (await connectionList()).connection_list[PROFILE] ?? [];
    assert.equal(connections.length, 1);
    const [connection] = connections;
    assert.equal(connection?.connection_id, device.publicKey);
    assert.equal(connection?.display_name, 'Laptop');
    assert.equal(connection?.user_id, 'alice');
    assert.equal(connection?.vpn_proto, 'wireguard');
    const addresses = (await client.exec('ip', ['-o', 'address', 'show', 'dev', device.interfaceName, 'scope', 'global'])).stdout;
    for (const ip of connection?.ip_list ?? []) assert.ok(addresses.includes(ip), `the device has address ${ip}`);
    assert.equal(connection?.ip_list.length, 2);
  });

  test('the portal lists the connection until exactly 3 minutes after the handshake the node reports', async () => {
    assert.ok(device !== null, 'a device is up');
    const handshake = await lastHandshakeOnNode(device.publicKey);
    const listedIds = async () => ((await connectionList()).connection_list[PROFILE] ?? []).map((entry) => entry.connection_id);
    try {
      pinnedNow = new Date(handshake.getTime() + 179_000);
      assert.deepEqual(await listedIds(), [device.publicKey], '179 s after the handshake the device is listed');
      assert.deepEqual((await connectedUsers()).connected_users, { [PROFILE]: ['alice'] });
      pinnedNow = new Date(handshake.getTime() + 180_000);
      assert.deepEqual(await listedIds(), [], '180 s after the handshake it is not');
      assert.deepEqual((await connectedUsers()).connected_users, { [PROFILE]: [] });
      // show_all=on lists configurations, whatever their handshakes.
      const all = (await portal.get('/connection_list', { show_all: 'on' })).json() as { connection_list: Record<string, ConnectionEntry[]> };
      assert.deepEqual(
        all.connection_list[PROFILE]?.map((entry) => entry.connection_id),
        [device.publicKey],
      );
    } finally {
      pinnedNow = null;
    }
  });

  test('disabling the user cuts the tunnel and empties both lists', async () => {
    const disabled = await portal.post('/disable_user', { user_id: 'alice' });
    assertSuccess(disabled);
    await assertPingFails('no reply for a disabled user');
    assert.deepEqual((await connectedUsers()).connected_users, { [PROFILE]: [] });
    assert.deepEqual((await connectionList()).connection_list, { [PROFILE]: [] });
  });

  test('enabling the user lets the same configuration pass again', async () => {
    const enabled = await portal.post('/enable_user', { user_id: 'alice' });
    assertSuccess(enabled);
    await assertPingPasses('the same tunnel works after enable_user');
    assert.deepEqual((await connectedUsers()).connected_users, { [PROFILE]: ['alice'] });
  });

  test('a node agent restarted mid-way gets its peers back from the portal', async () => {
    assert.equal(await agent.stop(), 0);
    await assertPingFails('no reply while the node agent is down');
    agent = await startAgent();
    await assertPingPasses('the reconciled peer passes again');
  });

  test('deleting the connection ends it for good', async () => {
    assert.ok(device !== null, 'a device is up');
    const deleted = await portal.post('/delete_connection', { user_id: 'alice', connection_id: device.publicKey });
    assertSuccess(deleted);
    await assertPingFails('no reply after delete_connection');
    assert.deepEqual((await connectionList()).connection_list, { [PROFILE]: [] });
    await client.exec('wg-quick', ['down', join(directory, `${device.interfaceName}.conf`)]);
    device = null;
  });

  test('destroying the user ends a new configuration too and removes the user', async () => {
    await provisionDevice('Phone');
    await assertPingPasses('ping through the second configuration');

    const destroyed = await portal.post('/destroy', { user_id: 'alice' });
    assertSuccess(destroyed);
    await assertPingFails('no reply after destroy');
    assert.deepEqual((await portal.get('/users')).json(), { users: [] });
    assert.deepEqual((await connectionList()).connection_list, { [PROFILE]: [] });
  });
});
