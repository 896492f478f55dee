// WireGuard over TCP, the whole path: the portal runs on the host, the node agent (wireguard-go
// and its ProxyGuard relay) in namespace "node", a managed device in namespace "client" whose
// network drops every UDP datagram to and from the node, as a hotel network may. The plain
// WireGuard file gets nowhere there; the WireGuard-over-TCP file from `create`, brought up
// behind a ProxyGuard client (test/support/uotlv-client.ts) that frames WireGuard's datagrams
// onto one TCP connection to the file's ProxyEndpoint, reaches the node, and the portal lists
// the connection.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { asNodeNumber } from '../../src/shared/ids.js';
import { NetnsLab, type Namespace } from '../support/netns.js';
import { NodeAgentProcess } from '../support/node-agent-process.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

const PROFILE = 'employees';
const GATEWAY = '198.19.45.1';
const RELAY_PORT = 51821;
const UOTLV_CLIENT = fileURLToPath(new URL('../support/uotlv-client-main.ts', import.meta.url));

interface ConnectionEntry {
  connection_id: string;
  display_name: string;
  user_id: string;
  vpn_proto: string;
}

describe('a device behind a UDP-blocking network reaches the node with WireGuard over TCP', () => {
  const lab = new NetnsLab();
  let directory: string;
  let node: Namespace;
  let client: Namespace;
  let portal: TestPortal;
  let agent: NodeAgentProcess;
  /** The node's address on the client's network: its WireGuard endpoint and its relay. */
  let nodeAddress: string;
  let clientLinkInterface: string;
  let proxyEndpoint: string;
  let tcpDevice: { interfaceName: string; publicKey: string } | null = null;

  const ping = (seconds: number) => client.run('ping', ['-c', '1', '-i', '0.5', '-w', String(seconds), GATEWAY]);
  /** Packets the client's nftables rules have dropped so far (both directions). */
  const droppedUdpPackets = async (): Promise<number> => {
    const { stdout } = await client.exec('nft', ['list', 'table', 'inet', 'udp_blocked']);
    return [...stdout.matchAll(/counter packets (\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
  };

  /** POST /create with this Accept header; the file is written for wg-quick, which names the interface after it. */
  const createFile = async (accept: string, displayName: string): Promise<{ text: string; file: string; interfaceName: string }> => {
    const created = await portal.post('/create', { user_id: 'alice', profile_id: PROFILE, display_name: displayName }, { accept });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.headers.get('content-type'), accept);
    const interfaceName = lab.interfaceName('wgc');
    return { text: created.text, file: join(directory, `${interfaceName}.conf`), interfaceName };
  };
  const wgQuickUp = (file: string) => client.exec('wg-quick', ['up', file], { env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' } });

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'wireguard-tcp-e2e-'));
    node = await lab.namespace('tcpnode');
    client = await lab.namespace('tcpclient');
    const hostLink = lab.subnet();
    const clientLink = lab.subnet();
    await lab.vethPair({ namespace: null, address: `${hostLink.first}/30` }, { namespace: node, address: `${hostLink.second}/30` });
    const link = await lab.vethPair({ namespace: node, address: `${clientLink.first}/30` }, { namespace: client, address: `${clientLink.second}/30` });
    clientLinkInterface = link.bName;
    nodeAddress = clientLink.first;

    const nodeUrl = `http://${hostLink.second}:41194`;
    portal = await startTestPortal({
      config: {
        listen: { host: hostLink.first, port: 0 },
        adminApi: { allowList: [`${hostLink.first}/32`], trustedProxyList: [] },
        reconcileInterval: 'PT3S',
        // No TLS reverse proxy in the test: the ProxyEndpoint is the node's relay itself.
        WireGuard: { enableProxy: true, proxyUrl: `http://${nodeAddress}:${RELAY_PORT}/proxyguard` },
        ProfileList: [
          {
            profileId: PROFILE,
            displayName: 'Employees',
            hostName: nodeAddress,
            defaultGateway: false,
            wRangeFour: '198.19.45.0/24',
            wRangeSix: 'fd00:45::/64',
            nodeUrl,
          },
        ],
      },
    });

    const agentConfigFile = join(directory, 'node.json');
    await writeFile(
      agentConfigFile,
      JSON.stringify({
        apiUrl: portal.nodeApiUrl,
        nodeNumber: 0,
        nodeKeyFile: portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)),
        listen: { host: hostLink.second, port: 41194 },
        WireGuard: { interfaceName: lab.interfaceName('wgn'), endpointFile: join(directory, 'endpoints.json') },
        ProxyGuard: { listen: { host: nodeAddress, port: RELAY_PORT }, maxTunnels: 10 },
      }),
    );
    agent = new NodeAgentProcess(node, agentConfigFile);
    await agent.ready();
    await agent.waitFor((line) => line.msg === 'serving ProxyGuard (WireGuard over TCP)', 'serving ProxyGuard');

    // The hotel network: UDP on the link to the node is dropped both ways; TCP passes.
    await client.exec('nft', ['-f', '-'], {
      stdin: [
        'table inet udp_blocked {',
        `  chain input { type filter hook input priority 0; policy accept; iifname "${clientLinkInterface}" meta l4proto udp counter drop; }`,
        `  chain output { type filter hook output priority 0; policy accept; oifname "${clientLinkInterface}" meta l4proto udp counter drop; }`,
        '}',
        '',
      ].join('\n'),
    });
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

  test('the plain WireGuard file gets no reply: its UDP is dropped on the way', async () => {
    const { text, file } = await createFile('application/x-wireguard-profile', 'Laptop (UDP)');
    await writeFile(file, text, { mode: 0o600 });
    await wgQuickUp(file);
    assert.notEqual((await ping(3)).exitCode, 0, 'no ping reply over UDP');
    assert.ok((await droppedUdpPackets()) > 0, 'the handshake attempts were dropped by the nftables rule');
    await client.exec('wg-quick', ['down', file]);
  });

  test("the WireGuard-over-TCP file names the local ProxyGuard client and the node's relay", async () => {
    const { text, file, interfaceName } = await createFile('application/x-wireguard+tcp-profile', 'Laptop (TCP)');
    const peer = parseWireGuardFile(text).peer;
    assert.equal(peer.get('Endpoint'), '127.0.0.1:51820');
    proxyEndpoint = peer.get('ProxyEndpoint') ?? '';
    assert.equal(proxyEndpoint, `http://${nodeAddress}:${RELAY_PORT}/proxyguard/${nodeAddress}`);

    // ProxyEndpoint is for the ProxyGuard client; wg itself does not know the key.
    await writeFile(
      file,
      text
        .split('\n')
        .filter((line) => !line.startsWith('ProxyEndpoint'))
        .join('\n'),
      { mode: 0o600 },
    );
    tcpDevice = { interfaceName, publicKey: '' };
  });

  test('behind the ProxyGuard client, pings to the node come back, over TCP only', async () => {
    assert.ok(tcpDevice !== null, 'the TCP file was created');
    const proxyGuardClient: ChildProcess = client.spawn(process.execPath, ['--import', 'tsx', UOTLV_CLIENT, '127.0.0.1:51820', proxyEndpoint]);
    await readyLine(proxyGuardClient);

    const droppedBefore = await droppedUdpPackets();
    await wgQuickUp(join(directory, `${tcpDevice.interfaceName}.conf`));
    tcpDevice.publicKey = (await client.exec('wg', ['show', tcpDevice.interfaceName, 'public-key'])).stdout.trim();

    const result = await ping(30);
    assert.equal(result.exitCode, 0, `ping through the TCP tunnel: ${result.stdout}${result.stderr}`);
    assert.equal(await droppedUdpPackets(), droppedBefore, 'nothing of the TCP tunnel tried UDP on the blocked link');
    const { stdout: tunnels } = await node.exec('ss', ['-Htn', 'state', 'established', `( sport = :${RELAY_PORT} )`]);
    assert.equal(tunnels.trim().split('\n').filter(Boolean).length, 1, `one TCP connection to the relay: ${tunnels}`);
  });

  test('the portal lists the TCP connection as online', async () => {
    assert.ok(tcpDevice !== null && tcpDevice.publicKey !== '', 'the TCP device is up');
    const response = await portal.get('/connection_list');
    assert.equal(response.status, 200);
    const connections = (response.json() as { connection_list: Record<string, ConnectionEntry[]> }).connection_list[PROFILE] ?? [];
    assert.deepEqual(
      connections.map((entry) => [entry.connection_id, entry.display_name, entry.user_id, entry.vpn_proto]),
      [[tcpDevice.publicKey, 'Laptop (TCP)', 'alice', 'wireguard']],
      'only the configuration that did a handshake (the UDP one never did)',
    );
    assert.deepEqual((await portal.get('/connected_users')).json(), { connected_users: { [PROFILE]: ['alice'] } });
  });
});

/** Resolves when the test ProxyGuard client prints "ready" (its UDP port bound, its tunnel open). */
async function readyLine(child: ChildProcess): Promise<void> {
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  for (let waited = 0; !output.includes('ready'); waited += 50) {
    assert.ok(child.exitCode === null, `the ProxyGuard client is running: ${output}`);
    assert.ok(waited < 20_000, `the ProxyGuard client is ready within 20 s: ${output}`);
    await sleep(50);
  }
}
