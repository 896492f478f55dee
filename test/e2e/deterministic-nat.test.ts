// Deterministic NAT, proven with real traffic: two WireGuard clients behind one node whose
// node.json names public addresses, and a namespace standing for the Internet whose server logs
// the address and source port each TCP connection and UDP datagram comes from. Every logged pair
// lies in the sending client's block and maps back to it (ICMP's echo id too, read from the
// node's conntrack); the portal restarted with other ranges changes the mapping, which node_info
// reports; the table goes with the agent; ranges that do not fit refuse the start.
import assert from 'node:assert/strict';
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readNodeKey } from '../../src/agent/node-key.js';
import { DeterministicNat } from '../../src/net/deterministic-nat.js';
import type { NatMode } from '../../src/protocol/vpn-daemon.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { NodeAgentProcess } from '../support/node-agent-process.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';
import { connectSourceRoutedClient, type SourceRoutedClient } from '../support/source-routed-clients.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

/** 32 addresses of TEST-NET-1, given out of order: the node sorts them. */
const PUBLIC_ADDRESSES = Array.from({ length: 32 }, (_, index) => `192.0.2.${41 - index}`);
const PORTS_PER_CLIENT = 1000;
const SERVER_PORT = 8080;
const METRICS_PORT = 9467;
const FIRST_RANGE = '198.19.44.0/24';
/** The same clients' addresses, in a wider range that starts earlier: their blocks move. */
const SECOND_RANGE = '198.19.40.0/21';
/** 4,093 clients: 64 public addresses' worth at 1,000 ports, 32 given. */
const TOO_WIDE_RANGE = '198.19.32.0/20';

// Logs "tcp|udp ADDRESS PORT" for whatever reaches it; answers so the client knows it arrived
// (with "hold", keeps TCP connections open instead).
const SERVER = `
const net = require('node:net');
const dgram = require('node:dgram');
const [host, port, hold] = process.argv.slice(1);
const udp = dgram.createSocket('udp4');
udp.on('message', (message, from) => { console.log('udp', from.address, from.port); udp.send(message, from.port, from.address); });
net.createServer((socket) => { console.log('tcp', socket.remoteAddress, socket.remotePort); if (hold !== 'hold') socket.end('ok'); })
  .listen(Number(port), host, () => udp.bind(Number(port), host, () => console.log('listening')));
`;

// Three TCP connections and three UDP exchanges from one source address.
const CLIENT = `
const net = require('node:net');
const dgram = require('node:dgram');
const [local, host, port] = process.argv.slice(1);
const fail = (what) => new Error(what + ' from ' + local + ' timed out');
const tcp = () => new Promise((resolve, reject) => {
  const socket = net.connect({ host, port: Number(port), localAddress: local });
  socket.setTimeout(15000, () => { socket.destroy(); reject(fail('tcp')); });
  socket.on('data', () => {}).on('end', resolve).on('error', reject);
});
const udp = () => new Promise((resolve, reject) => {
  const socket = dgram.createSocket('udp4');
  const timer = setTimeout(() => { socket.close(); reject(fail('udp')); }, 15000);
  socket.on('message', () => { clearTimeout(timer); socket.close(); resolve(); });
  socket.bind(0, local, () => socket.send('hello', Number(port), host));
});
(async () => { for (let round = 0; round < 3; round++) { await tcp(); await udp(); } })()
  .then(() => process.exit(0), (error) => { console.error(error.message); process.exit(1); });
`;

/** The logging server in the Internet namespace, which routes the public addresses to the node; its lines so far. */
async function startInternetServer(lab: TunnelLab, holdConnections = false): Promise<() => string[]> {
  const internet = lab.internet;
  await internet.exec('ip', ['route', 'add', '192.0.2.0/24', 'via', lab.internetAddresses.nodeFour]);
  const server = internet.spawn(process.execPath, [
    '-e',
    SERVER,
    lab.internetAddresses.four,
    String(SERVER_PORT),
    holdConnections ? 'hold' : 'end',
  ]);
  const serverLines: string[] = [];
  let partial = '';
  server.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    serverLines.push(...parts);
  });
  await until('the internet server listens', async () => serverLines.includes('listening'));
  return () => serverLines.filter((line) => line !== 'listening');
}

/** The agent's /metrics, served on its link to the host. */
async function metricsOf(lab: TunnelLab): Promise<string> {
  const answer = await fetch(`http://${new URL(lab.nodeUrl).hostname}:${METRICS_PORT}/metrics`);
  assert.equal(answer.status, 200);
  return answer.text();
}

// Opens `count` TCP connections at once from one source address; prints how many were accepted.
const MANY_CONNECTIONS = `
const net = require('node:net');
const [local, host, port, count] = process.argv.slice(1);
const open = () => new Promise((resolve) => {
  const socket = net.connect({ host, port: Number(port), localAddress: local });
  socket.setTimeout(5000, () => { socket.destroy(); resolve(false); });
  socket.on('connect', () => resolve(true)).on('data', () => {}).on('error', () => resolve(false));
});
Promise.all(Array.from({ length: Number(count) }, open)).then((opened) => {
  console.log(opened.filter(Boolean).length);
  process.exit(0);
});
`;

/** Stops the lab's portal (or the one that took its place) and starts it again on the same data, address and port, with `range`. */
async function restartPortal(lab: TunnelLab, dataDir: string, running: TestPortal, range: string): Promise<TestPortal> {
  const portalUrl = new URL(lab.portal.nodeApiUrl);
  await running.close();
  return startTestPortal({
    dataDir,
    config: {
      listen: { host: portalUrl.hostname, port: Number(portalUrl.port) },
      adminApi: { allowList: [`${portalUrl.hostname}/32`, '127.0.0.1/32'], trustedProxyList: [] },
      ProfileList: [
        {
          profileId: LAB_PROFILE,
          displayName: 'Employees',
          hostName: lab.nodeAddressForClient,
          defaultGateway: true,
          wRangeFour: range,
          wRangeSix: 'fd00:44::/64',
          nodeUrl: lab.nodeUrl,
        },
      ],
    },
  });
}

/** Each client pings, then makes its connections; every one the server saw must be in its block. */
async function assertTrafficInBlocks(
  lab: TunnelLab,
  clients: readonly SourceRoutedClient[],
  mapping: DeterministicNat,
  serverLog: () => string[],
): Promise<void> {
  const target = lab.internetAddresses.four;
  for (const client of clients) {
    const block = mapping.blockOf(client.address);
    assert.ok(block !== null, `${client.address} is a client of the mapping`);
    const ping = await lab.client.run('ping', [
      '-c',
      '2',
      '-i',
      '0.2',
      '-W',
      '2',
      '-w',
      '20',
      '-I',
      client.address,
      target,
    ]);
    assert.equal(ping.exitCode, 0, `${client.address} reaches the internet: ${ping.stdout}${ping.stderr}`);
    const seen = serverLog().length;
    await lab.client.exec(process.execPath, ['-e', CLIENT, client.address, target, String(SERVER_PORT)]);
    await until('the server logged six arrivals', async () => serverLog().length >= seen + 6);
    const arrivals = serverLog()
      .slice(seen)
      .map((line) => line.split(' '));
    assert.deepEqual(arrivals.map(([protocol]) => protocol).sort(), ['tcp', 'tcp', 'tcp', 'udp', 'udp', 'udp']);
    for (const [protocol, publicAddress, port] of arrivals) {
      assert.equal(publicAddress, block.publicAddress, `${protocol} from ${client.address} left on its address`);
      const number = Number(port);
      assert.ok(
        number >= block.firstPort && number <= block.lastPort,
        `${protocol} port ${port} of ${client.address} lies in ${block.firstPort}-${block.lastPort}`,
      );
      assert.equal(mapping.clientOf(publicAddress ?? '', number), client.address, 'maps back to the client');
    }
    // ICMP: the echo id the Internet saw, as the node's connection tracking translated it.
    const tracked = await lab.node.exec('conntrack', ['-L', '-p', 'icmp', '--orig-src', client.address]);
    const replies = [...tracked.stdout.matchAll(/src=\S+ dst=(\S+) type=0 code=0 id=(\d+)/g)];
    assert.ok(replies.length > 0, `conntrack has the pings of ${client.address}: ${tracked.stdout}`);
    for (const [, publicAddress, id] of replies) {
      assert.equal(publicAddress, block.publicAddress);
      assert.equal(mapping.clientOf(publicAddress ?? '', Number(id)), client.address, `echo id ${id} in the block`);
    }
  }
}

test('with deterministic nat, each client leaves on its own public address and port block, which follows the ranges and goes with the agent', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'deterministic-nat-'));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const profile = { defaultGateway: true, wRangeFour: FIRST_RANGE };
  const lab = await startTunnelLab({
    internet: true,
    dataDir,
    startAgent: false,
    profile,
    agentConfig: ({ nodeAddressForPortal }) => ({
      nat: { publicAddresses: PUBLIC_ADDRESSES, portsPerClient: PORTS_PER_CLIENT },
      refreshIntervalSeconds: 1,
      metrics: { listen: `${nodeAddressForPortal}:${METRICS_PORT}` },
    }),
  });
  t.after(lab.close);

  // 253 clients at 2,000 ports need 8 addresses: the agent does not start with one.
  const agentConfig = JSON.parse(await readFile(lab.agentConfigFile, 'utf8')) as Record<string, unknown>;
  const refusedFile = join(lab.directory, 'refused.json');
  await writeFile(refusedFile, JSON.stringify({ ...agentConfig, nat: { publicAddresses: ['192.0.2.10'] } }));
  const refused = new NodeAgentProcess(lab.node, refusedFile);
  assert.equal(await refused.exitCode(), 2);
  assert.match(
    refused.output.join(''),
    /refused\.json: "nat" does not fit this node's client ranges: 253 client addresses need 8 public addresses at 2000 ports each \(32 clients per address\), but 1 is given/,
  );
  assert.notEqual((await lab.node.run('nft', ['list', 'table', 'inet', 'vpn_portal_nat'])).exitCode, 0);

  await lab.startAgent();
  const { key: nodeKey } = await readNodeKey(lab.portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)));
  const natOfNode = async (): Promise<NatMode | undefined> => {
    const answer = await fetch(new URL('/i/node', lab.nodeUrl), {
      headers: { authorization: `Bearer ${nodeKey.reveal()}` },
    });
    return ((await answer.json()) as { nat?: NatMode }).nat;
  };
  const first = await natOfNode();
  assert.ok(first?.mode === 'deterministic', JSON.stringify(first));
  assert.deepEqual(first, {
    mode: 'deterministic',
    applied_at: first.applied_at,
    ranges: [FIRST_RANGE],
    public_addresses: [...PUBLIC_ADDRESSES].reverse(),
    ports_per_client: PORTS_PER_CLIENT,
  });
  assert.ok(Math.abs(Date.parse(first.applied_at) - Date.now()) < 600_000, 'applied_at is a time of this run');

  const serverLog = await startInternetServer(lab);

  const clients = [
    await connectSourceRoutedClient(lab, 'alice', 101),
    await connectSourceRoutedClient(lab, 'bob', 102),
  ];
  assert.deepEqual(
    clients.map(({ address }) => address),
    ['198.19.44.2', '198.19.44.3'],
  );
  const firstMapping = new DeterministicNat({
    ranges: [FIRST_RANGE],
    publicAddresses: PUBLIC_ADDRESSES,
    portsPerClient: PORTS_PER_CLIENT,
  });
  await assertTrafficInBlocks(lab, clients, firstMapping, serverLog);
  assert.deepEqual(await natOfNode(), first, 'applied_at stays while the mapping does');
  assert.match(await metricsOf(lab), /^vpn_node_nat_ranges_refused 0$/m);

  // The portal restarted with a wider range: the same clients are now clients 1,024 and 1,025.
  let portal = await restartPortal(lab, dataDir, lab.portal, SECOND_RANGE);
  t.after(() => portal.close());
  let second: NatMode | undefined;
  await until(
    'the node applies the mapping of the new ranges',
    async () => {
      second = await natOfNode();
      return second?.mode === 'deterministic' && second.ranges[0] === SECOND_RANGE;
    },
    30_000,
  );
  assert.ok(second?.mode === 'deterministic');
  assert.ok(second.applied_at > first.applied_at, `applied_at moved on: ${first.applied_at} → ${second.applied_at}`);
  const secondMapping = new DeterministicNat({
    ranges: [SECOND_RANGE],
    publicAddresses: PUBLIC_ADDRESSES,
    portsPerClient: PORTS_PER_CLIENT,
  });
  assert.equal(secondMapping.blockOf('198.19.44.2')?.publicAddress, '192.0.2.26', 'the blocks moved');
  // Forget the first round's pings, so the echo ids read back are the new mapping's.
  await lab.node.exec('conntrack', ['-F']);
  await assertTrafficInBlocks(lab, clients, secondMapping, serverLog);

  // Ranges that no longer fit: the mapping in force stays, said in the log and the metrics.
  portal = await restartPortal(lab, dataDir, portal, TOO_WIDE_RANGE);
  const refusal = await lab.agent.waitFor(
    (line) => typeof line.msg === 'string' && line.msg.startsWith('the client ranges do not fit deterministic nat'),
    'the refusal of the new ranges',
    30_000,
  );
  assert.match(String(refusal['reason']), /^4093 client addresses need 64 public addresses at 1000 ports each/);
  assert.equal(refusal.level, 50, 'logged as an error');
  assert.deepEqual(await natOfNode(), second, 'node_info still reports the mapping in force');
  assert.match(await metricsOf(lab), /^vpn_node_nat_ranges_refused 1$/m);
  await assertTrafficInBlocks(lab, clients.slice(0, 1), secondMapping, serverLog);

  await lab.stopAgent();
  assert.notEqual(
    (await lab.node.run('nft', ['list', 'table', 'inet', 'vpn_portal_nat'])).exitCode,
    0,
    'the table went with the agent',
  );
});

test('a client that used its whole port block gets no further connection, and the node counts the dropped attempts', async (t) => {
  const lab = await startTunnelLab({
    internet: true,
    profile: { defaultGateway: true },
    agentConfig: ({ nodeAddressForPortal }) => ({
      nat: { publicAddresses: ['192.0.2.10'], portsPerClient: 64 },
      metrics: { listen: `${nodeAddressForPortal}:${METRICS_PORT}` },
    }),
  });
  t.after(lab.close);
  const serverLog = await startInternetServer(lab, true);
  const client = await connectSourceRoutedClient(lab, 'carol', 101);
  const ping = await lab.client.run('ping', [
    '-c',
    '1',
    '-W',
    '2',
    '-w',
    '20',
    '-I',
    client.address,
    lab.internetAddresses.four,
  ]);
  assert.equal(ping.exitCode, 0, ping.stdout);
  assert.match(await metricsOf(lab), /^vpn_node_conntrack_insert_failed_total 0$/m);

  // Each connection keeps its port while it is open (the kernel takes back those of closed ones): 64 fit in the block.
  const opened = await lab.client.exec(process.execPath, [
    '-e',
    MANY_CONNECTIONS,
    client.address,
    lab.internetAddresses.four,
    String(SERVER_PORT),
    '80',
  ]);
  assert.equal(opened.stdout.trim(), '64', 'only as many connections as the block has ports');
  const mapping = new DeterministicNat({ ranges: [FIRST_RANGE], publicAddresses: ['192.0.2.10'], portsPerClient: 64 });
  const ports = serverLog().map((line) => Number(line.split(' ')[2]));
  assert.equal(new Set(ports).size, 64);
  for (const port of ports) assert.equal(mapping.clientOf('192.0.2.10', port), client.address);
  const failed = Number(/^vpn_node_conntrack_insert_failed_total (\d+)$/m.exec(await metricsOf(lab))?.[1]);
  assert.ok(failed >= 16, `the 16 refused connections' attempts are counted: ${failed}`);
});
