// WireGuard over TCP, the whole path: the portal runs on the host, the node agent (wireguard-go
// and its ProxyGuard relay) in namespace "node", a managed device in namespace "client" whose
// network drops every UDP datagram to and from the node, as a hotel network may. The plain
// WireGuard file gets nowhere there; the WireGuard-over-TCP file from `create`, brought up
// behind a ProxyGuard client (test/support/uotlv-client.ts) that frames WireGuard's datagrams
// onto one TCP connection to the file's ProxyEndpoint, reaches the node, and the portal lists
// the connection, and RADIUS accounting names the device, not the relay, as its Calling-Station-Id.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { detailRecord, startFreeRadius, type FreeRadius } from '../support/freeradius.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

const GATEWAY = '198.19.45.1';
const RELAY_PORT = 51821;
const UOTLV_CLIENT = fileURLToPath(new URL('../support/uotlv-client-main.ts', import.meta.url));
const UOTLV_JUNK = fileURLToPath(new URL('../support/uotlv-junk-main.ts', import.meta.url));
const MAX_TUNNELS = 10;

describe('a device behind a UDP-blocking network reaches the node with WireGuard over TCP', () => {
  let lab: TunnelLab;
  /** The node's address on the client's network: its WireGuard endpoint and its relay. */
  let nodeAddress: string;
  let proxyEndpoint: string;
  let tcpDevice: { interfaceName: string; publicKey: string } | null = null;
  /** The device's ProxyGuard client, once started. */
  let proxyGuardClient: ChildProcess | null = null;
  let radius: FreeRadius;
  let secretFolder: string;

  /** Packets the client's nftables rules have dropped so far (both directions). */
  const droppedUdpPackets = async (): Promise<number> => {
    const { stdout } = await lab.client.exec('nft', ['list', 'table', 'inet', 'udp_blocked']);
    return [...stdout.matchAll(/counter packets (\d+)/g)].reduce((sum, match) => sum + Number(match[1]), 0);
  };

  /** POST /create with this Accept header; the file is written for wg-quick, which names the interface after it. */
  const createFile = async (
    accept: string,
    displayName: string,
  ): Promise<{ text: string; file: string; interfaceName: string }> => {
    const created = await lab.portal.admin.create(
      { user_id: 'alice', profile_id: LAB_PROFILE, display_name: displayName },
      accept,
    );
    assert.equal(created.contentType, accept);
    const interfaceName = lab.lab.interfaceName('wgc');
    return { text: created.body, file: join(lab.directory, `${interfaceName}.conf`), interfaceName };
  };
  const wgQuickUp = (file: string) =>
    lab.client.exec('wg-quick', ['up', file], { env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' } });

  const startProxyGuardClient = (): ChildProcess =>
    lab.client.spawn(process.execPath, ['--import', 'tsx', UOTLV_CLIENT, '127.0.0.1:51820', proxyEndpoint]);
  const relayTunnels = async (): Promise<number> => {
    const metrics = await (await fetch(`${lab.nodeUrl.replace(/:41194$/, ':9467')}/metrics`)).text();
    return Number(/^vpn_node_proxyguard_tunnels (\d+)$/m.exec(metrics)?.[1]);
  };

  before(async () => {
    radius = await startFreeRadius();
    secretFolder = await mkdtemp(join(tmpdir(), 'radius-secret-'));
    const secretFile = join(secretFolder, 'radius.secret');
    await writeFile(secretFile, radius.secret, { mode: 0o600 });
    lab = await startTunnelLab({
      profile: { wRangeFour: '198.19.45.0/24', wRangeSix: 'fd00:45::/64' },
      portalConfig: ({ nodeAddressForClient }) => ({
        reconcileInterval: 'PT3S',
        accounting: { radius: { servers: [{ address: `${radius.host}:${radius.port}`, secretFile }] } },
        // No TLS reverse proxy in the test: the ProxyEndpoint is the node's relay itself.
        WireGuard: { enableProxy: true, proxyUrl: `http://${nodeAddressForClient}:${RELAY_PORT}/proxyguard` },
      }),
      agentConfig: ({ nodeAddressForClient, nodeAddressForPortal }) => ({
        ProxyGuard: { listen: { host: nodeAddressForClient, port: RELAY_PORT }, maxTunnels: MAX_TUNNELS },
        metrics: { listen: `${nodeAddressForPortal}:9467` },
      }),
    });
    nodeAddress = lab.nodeAddressForClient;
    await lab.agent.waitFor((line) => line.msg === 'serving ProxyGuard (WireGuard over TCP)', 'serving ProxyGuard');

    // The hotel network: UDP on the link to the node is dropped both ways; TCP passes.
    await lab.client.exec('nft', ['-f', '-'], {
      stdin: [
        'table inet udp_blocked {',
        `  chain input { type filter hook input priority 0; policy accept; iifname "${lab.clientLinkInterface}" meta l4proto udp counter drop; }`,
        `  chain output { type filter hook output priority 0; policy accept; oifname "${lab.clientLinkInterface}" meta l4proto udp counter drop; }`,
        '}',
        '',
      ].join('\n'),
    });
  });

  after(async () => {
    await lab?.close();
    await radius?.close();
    await rm(secretFolder, { recursive: true, force: true });
  });

  test('the plain WireGuard file gets no reply: its UDP is dropped on the way', async () => {
    const { text, file } = await createFile('application/x-wireguard-profile', 'Laptop (UDP)');
    await writeFile(file, text, { mode: 0o600 });
    await wgQuickUp(file);
    assert.equal(await lab.ping(3, GATEWAY), false, 'no ping reply over UDP');
    assert.ok((await droppedUdpPackets()) > 0, 'the handshake attempts were dropped by the nftables rule');
    await lab.client.exec('wg-quick', ['down', file]);
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
    proxyGuardClient = startProxyGuardClient();
    await readyLine(proxyGuardClient);

    const droppedBefore = await droppedUdpPackets();
    await wgQuickUp(join(lab.directory, `${tcpDevice.interfaceName}.conf`));
    tcpDevice.publicKey = (await lab.client.exec('wg', ['show', tcpDevice.interfaceName, 'public-key'])).stdout.trim();

    assert.ok(await lab.ping(30, GATEWAY), 'ping through the TCP tunnel');
    assert.equal(await droppedUdpPackets(), droppedBefore, 'nothing of the TCP tunnel tried UDP on the blocked link');
    const { stdout: tunnels } = await lab.node.exec('ss', [
      '-Htn',
      'state',
      'established',
      `( sport = :${RELAY_PORT} )`,
    ]);
    assert.equal(tunnels.trim().split('\n').filter(Boolean).length, 1, `one TCP connection to the relay: ${tunnels}`);
    assert.equal(await relayTunnels(), 1, 'the agent counts the open tunnel');
  });

  test('the portal lists the TCP connection as online', async () => {
    assert.ok(tcpDevice !== null && tcpDevice.publicKey !== '', 'the TCP device is up');
    const connections = (await lab.portal.admin.connectionList())[LAB_PROFILE] ?? [];
    assert.deepEqual(
      connections.map((entry) => [entry.connection_id, entry.display_name, entry.user_id, entry.vpn_proto]),
      [[tcpDevice.publicKey, 'Laptop (TCP)', 'alice', 'wireguard']],
      'only the configuration that did a handshake (the UDP one never did)',
    );
    assert.deepEqual(await lab.portal.admin.connectedUsers(), { [LAB_PROFILE]: ['alice'] });

    // Its session's origin is the device as the relay saw it, not the relay's own 127.0.0.1.
    await lab.portal.reconcile();
    const sessions = (await lab.portal.admin.connectionLog({ connection_id: tcpDevice.publicKey })).connection_log;
    assert.deepEqual(
      sessions.map((session) => [session.vpn_proto, session.originating_ip, session.disconnected_at]),
      [['wireguard', lab.clientAddress, null]],
    );
    const start = await detailRecord(radius, 'the Start', (record) => record['Acct-Status-Type'] === 'Start');
    assert.equal(start['Calling-Station-Id'], lab.clientAddress, 'the device as the relay saw it');
  });

  test('a device whose tunnel closed gets a new one while tunnels WireGuard cannot authenticate fill every place of the relay, and its pings come back', async () => {
    assert.ok(tcpDevice !== null && proxyGuardClient !== null, 'the TCP device is up');
    // The device's tunnel goes, as on a network change: its ProxyGuard client stops.
    proxyGuardClient.kill('SIGTERM');
    await once(proxyGuardClient, 'exit');
    for (let waited = 0; (await relayTunnels()) !== 0; waited += 100) {
      assert.ok(waited < 10_000, 'the relay sees the tunnel closed');
      await sleep(100);
    }

    // Someone who is no peer opens more tunnels than the relay holds, each sending junk that
    // the node's real WireGuard drops unanswered: each takes the place of the oldest.
    const junk = lab.client.spawn(process.execPath, ['--import', 'tsx', UOTLV_JUNK, proxyEndpoint, '25']);
    try {
      const tried = JSON.parse(await firstLine(junk)) as { opened: number; refused: number };
      assert.deepEqual(tried, { opened: 25, refused: 0 }, 'a full relay of unanswered tunnels still takes a new one');
      assert.equal(await relayTunnels(), MAX_TUNNELS, 'the relay is full');

      proxyGuardClient = startProxyGuardClient();
      await readyLine(proxyGuardClient);
      assert.ok(await lab.ping(30, GATEWAY), 'ping through the new TCP tunnel');
      assert.equal(await relayTunnels(), MAX_TUNNELS, 'the device took the place of a junk tunnel');
    } finally {
      junk.kill('SIGTERM');
    }
  });
});

/** The first line a child process prints (within 30 s). */
async function firstLine(child: ChildProcess): Promise<string> {
  let output = '';
  let errors = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  for (let waited = 0; !output.includes('\n'); waited += 50) {
    assert.ok(child.exitCode === null, `the process is running: ${errors}`);
    assert.ok(waited < 30_000, `a line within 30 s: ${output}${errors}`);
    await sleep(50);
  }
  return output.slice(0, output.indexOf('\n'));
}

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
