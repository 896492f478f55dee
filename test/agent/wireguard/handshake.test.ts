// A device with a WireGuard client talks to the node through the tunnel: the agent's peer list
// shows the real handshake and traffic, "online" ends exactly 3 minutes after the handshake,
// and removing the peer cuts the tunnel off.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { startNodeAgent, type RunningNodeAgent } from '../../../src/agent/agent.js';
import { parseNodeAgentConfig } from '../../../src/agent/config.js';
import { readNodeKey } from '../../../src/agent/node-key.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { NetnsLab, type Namespace } from '../../support/netns.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

interface ListedPeer {
  public_key: string;
  ip_net: string[];
  last_handshake_time?: string;
  bytes_in: number;
  bytes_out: number;
}

describe('a WireGuard client connected through the node', () => {
  const lab = new NetnsLab();
  const clientKeys = generateWireGuardKeyPair();
  let nodeKey: string;
  /** The agent's clock: the real time unless a test pins it. */
  let pinnedNow: Date | null = null;
  let directory: string;
  let node: Namespace;
  let client: Namespace;
  let portal: TestPortal;
  let agent: RunningNodeAgent;
  let clientInterface: string;

  const daemon = (path: string, init: RequestInit = {}) =>
    fetch(new URL(path, agent.daemonUrl), { ...init, headers: { authorization: `Bearer ${nodeKey}` } });
  const onlinePeers = async (): Promise<ListedPeer[]> =>
    ((await (await daemon('/w/peer_list?show_all=no')).json()) as { peer_list: ListedPeer[] }).peer_list;
  // One reply within the deadline is enough: the first packets may wait for a handshake retry.
  const pingGateway = (deadlineSeconds: number) =>
    client.run('ping', ['-c', '1', '-i', '0.2', '-w', String(deadlineSeconds), '198.19.3.1']);

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'node-agent-handshake-'));
    node = await lab.namespace('node');
    client = await lab.namespace('client');
    const link = lab.subnet();
    await lab.vethPair(
      { namespace: node, address: `${link.first}/30` },
      { namespace: client, address: `${link.second}/30` },
    );

    // The portal hands node 0 its WireGuard key, port 51820 and the gateway 198.19.3.1.
    portal = await startTestPortal({
      config: {
        ProfileList: [
          {
            profileId: 'employees',
            displayName: 'Employees',
            hostName: link.first,
            wRangeFour: '198.19.3.0/24',
            wRangeSix: 'fd00:3::/64',
            // This test plays the portal's part in the vpn-daemon protocol itself.
            nodeUrl: UNREACHABLE_NODE,
          },
        ],
      },
    });
    const serverPublicKey = portal.portal.ctx.keys.wireGuardPublicKey(asNodeNumber(0));
    assert.ok(serverPublicKey !== null, 'the portal made a WireGuard key for node 0');
    const config = parseNodeAgentConfig(
      {
        // Tests run side by side in the host's namespace: any free port.
        metrics: { listen: '127.0.0.1:0' },
        apiUrl: portal.nodeApiUrl,
        nodeKeyFile: portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)),
        listen: { port: 0 },
        WireGuard: { interfaceName: lab.interfaceName('wgn'), endpointFile: join(directory, 'endpoints.json') },
      },
      '/etc/vpn-portal/node.json',
    );
    const key = (await readNodeKey(config.nodeKeyFile)).key;
    nodeKey = key.reveal();
    agent = await startNodeAgent({
      config,
      nodeKey: key,
      logger: pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }),
      version: 'test',
      runner: node.runner(),
      clock: { now: () => pinnedNow ?? new Date() },
    });

    // The device: a userspace WireGuard interface set up with the standard tools.
    clientInterface = lab.interfaceName('wgc');
    client.spawn('wireguard-go', ['-f', clientInterface], { env: { WG_PROCESS_FOREGROUND: '1' } });
    await until(
      'the client interface comes up',
      async () => (await client.run('wg', ['show', clientInterface])).exitCode === 0,
      60_000,
    );
    const keyFile = join(directory, 'client.key');
    await writeFile(keyFile, clientKeys.privateKey, { mode: 0o600 });
    await client.exec('wg', [
      'set',
      clientInterface,
      'private-key',
      keyFile,
      'peer',
      serverPublicKey,
      'endpoint',
      `${link.first}:51820`,
      'allowed-ips',
      '198.19.3.0/24',
    ]);
    await client.exec('ip', ['address', 'add', '198.19.3.2/24', 'dev', clientInterface]);
    await client.exec('ip', ['link', 'set', 'dev', clientInterface, 'up']);
  });

  after(async () => {
    try {
      await agent?.stop();
      await portal?.close();
    } finally {
      await lab.cleanup();
      await rm(directory, { recursive: true, force: true });
    }
  });

  test('once the portal adds the device as a peer, pings through the tunnel come back', async () => {
    assert.notEqual((await pingGateway(1)).exitCode, 0, 'no tunnel before the peer is added');

    const added = await daemon('/w/add_peer', {
      method: 'POST',
      body: new URLSearchParams([
        ['public_key', clientKeys.publicKey],
        ['ip_net', '198.19.3.2/32'],
        ['ip_net', 'fd00:3::2/128'],
      ]),
    });
    assert.equal(added.status, 204);

    const ping = await pingGateway(15);
    assert.equal(ping.exitCode, 0, ping.stdout + ping.stderr);
  });

  test('peer_list shows the handshake and the traffic, and show_all=no keeps the peer for exactly 3 minutes', async () => {
    const [peer] = await onlinePeers();
    assert.equal(peer?.public_key, clientKeys.publicKey);
    assert.deepEqual(peer?.ip_net, ['198.19.3.2/32', 'fd00:3::2/128']);
    assert.ok(peer.bytes_in > 0 && peer.bytes_out > 0, `traffic counted: ${JSON.stringify(peer)}`);
    assert.match(peer.last_handshake_time ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    const handshake = new Date(peer.last_handshake_time ?? '');
    assert.ok(Math.abs(Date.now() - handshake.getTime()) < 30_000, 'the handshake just happened');

    pinnedNow = new Date(handshake.getTime() + 179_000);
    assert.equal((await onlinePeers()).length, 1, '179 s after the handshake the device is online');
    pinnedNow = new Date(handshake.getTime() + 180_000);
    assert.equal((await onlinePeers()).length, 0, '180 s after the handshake it is not');
    pinnedNow = null;
  });

  test('removing the peer reports its traffic and the tunnel stops passing packets', async () => {
    const removed = await daemon('/w/remove_peer', {
      method: 'POST',
      body: new URLSearchParams({ public_key: clientKeys.publicKey }),
    });
    assert.equal(removed.status, 200);
    const peer = (await removed.json()) as ListedPeer;
    assert.equal(peer.public_key, clientKeys.publicKey);
    assert.ok(peer.bytes_in > 0, 'the removed peer reports its received bytes');
    assert.ok(peer.last_handshake_time !== undefined, 'the removed peer reports its handshake');

    assert.notEqual((await pingGateway(2)).exitCode, 0, 'no reply without the peer');
  });
});
