// A VPN node runs the portal's OpenVPN servers. The node agent gets two server files for the
// profile "employees" (process 0 on UDP, process 1 on TCP) from the portal, writes them,
// runs one `openvpn` per file in the node's network namespace and decides about every client
// that connects: the certificate's OU must name the process's profile, then the portal's
// /connect says OK or ERR. Real OpenVPN clients connect from a second namespace. The portal
// is a stand-in that only replaces the portal's policy (which CN is allowed).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { startNodeAgent, type RunningNodeAgent } from '../../../src/agent/agent.js';
import { parseNodeAgentConfig } from '../../../src/agent/config.js';
import { Secret } from '../../../src/shared/secret.js';
import { NetnsLab, requireRoot, type Namespace } from '../../support/netns.js';
import { AUTH_FAILED, CONNECTED, OpenVpnClient } from '../../support/openvpn-client.js';
import { clientFileText, serverFileText } from '../../support/openvpn-files.js';
import { randomCommonName, TestPki, type CertificateAndKey } from '../../support/openvpn-pki.js';
import { PortalStandIn, type FormCall, type OpenVpnFileJson } from '../../support/openvpn-portal-stand-in.js';

const PROFILE = 'employees';
const NODE_NUMBER = 1;

interface ListedConnection {
  common_name: string;
  ip_four: string;
  ip_six: string | null;
}

describe('OpenVPN servers run by the node agent', () => {
  const lab = new NetnsLab();
  const nodeKey = randomBytes(32).toString('hex');
  const logLines: string[] = [];
  let directory: string;
  let configDir: string;
  let managementDir: string;
  let node: Namespace;
  let client: Namespace;
  let nodeAddress: string;
  let clientAddress: string;
  let pki: TestPki;
  let serverCertificate: CertificateAndKey;
  let portal: PortalStandIn;
  let agent: RunningNodeAgent | null = null;
  const clients: OpenVpnClient[] = [];
  let clientCount = 0;
  /** The client connected over TCP, still connected when its server is removed. */
  let tcpClientName = '';

  const udpFile = (): OpenVpnFileJson => ({
    name: `${PROFILE}-0.conf`,
    profileId: PROFILE,
    processNumber: 0,
    proto: 'udp',
    port: 1194,
    content: serverFileText({
      profileId: PROFILE,
      processNumber: 0,
      proto: 'udp',
      port: 1194,
      device: 'tun0',
      network: ['198.19.10.0/24', '255.255.255.0'],
      networkSix: 'fd00:10::/112',
      managementDir,
      pki,
      server: serverCertificate,
    }),
  });
  const tcpFile = (extra: readonly string[] = []): OpenVpnFileJson => ({
    name: `${PROFILE}-1.conf`,
    profileId: PROFILE,
    processNumber: 1,
    proto: 'tcp',
    port: 1194,
    content: serverFileText({
      profileId: PROFILE,
      processNumber: 1,
      proto: 'tcp',
      port: 1194,
      device: 'tun1',
      network: ['198.19.11.0/24', '255.255.255.0'],
      networkSix: 'fd00:11::/112',
      managementDir,
      pki,
      server: serverCertificate,
      extra,
    }),
  });

  const runningAgent = (): RunningNodeAgent => {
    assert.ok(agent !== null, 'the agent runs');
    return agent;
  };
  const daemon = (path: string, init: RequestInit = {}) =>
    fetch(new URL(path, runningAgent().daemonUrl), { ...init, headers: { authorization: `Bearer ${nodeKey}` } });
  const connectionList = async (): Promise<ListedConnection[]> => {
    const response = await daemon('/o/connection_list');
    assert.equal(response.status, 200);
    return ((await response.json()) as { connection_list: ListedConnection[] }).connection_list;
  };
  const disconnectClient = (commonName: string) =>
    daemon('/o/disconnect_client', { method: 'POST', body: new URLSearchParams({ common_name: commonName }) });
  const nodeInfo = async (): Promise<Record<string, unknown>> =>
    (await (await daemon('/i/node')).json()) as Record<string, unknown>;
  const pidOf = (name: string): number | null => runningAgent().openVpn.server(name)?.pid ?? null;

  /** A device with a certificate of `profileId` and this common name, connecting over UDP or TCP. */
  const connect = async (
    commonName: string,
    options: { profileId?: string; proto?: 'udp' | 'tcp' } = {},
  ): Promise<OpenVpnClient> => {
    clientCount += 1;
    const certificate = await pki.client(options.profileId ?? PROFILE, commonName);
    const file = join(directory, `client-${clientCount}.conf`);
    const tunnel = `cl${clientCount}`;
    await writeFile(
      file,
      clientFileText({
        pki,
        client: certificate,
        remote: nodeAddress,
        port: 1194,
        proto: options.proto ?? 'udp',
        device: tunnel,
      }),
      {
        mode: 0o600,
      },
    );
    const device = new OpenVpnClient(client, file);
    clients.push(device);
    return device;
  };
  const disconnectsOf = (commonName: string): FormCall[] =>
    portal.disconnectCalls.filter((call) => call['common_name'] === commonName);
  const connectsOf = (commonName: string): FormCall[] =>
    portal.connectCalls.filter((call) => call['common_name'] === commonName);
  /** Pings from the client's namespace; one answer within the deadline is enough. */
  const ping = (address: string) => client.run('ping', ['-c', '1', '-i', '0.2', '-w', '10', address]);

  before(async () => {
    requireRoot();
    const openvpn = spawnSync('openvpn', ['--version'], { encoding: 'utf8' });
    if (openvpn.error !== undefined || openvpn.status !== 0)
      throw new Error(`these tests need the openvpn program: ${String(openvpn.error ?? openvpn.stderr)}`);

    directory = await mkdtemp(join(tmpdir(), 'node-agent-openvpn-'));
    configDir = join(directory, 'openvpn');
    managementDir = join(directory, 'run', 'openvpn');
    node = await lab.namespace('ovnode');
    client = await lab.namespace('ovclient');
    const link = lab.subnet();
    await lab.vethPair(
      { namespace: node, address: `${link.first}/30` },
      { namespace: client, address: `${link.second}/30` },
    );
    nodeAddress = link.first;
    clientAddress = link.second;

    pki = await TestPki.create(join(directory, 'pki'));
    serverCertificate = await pki.server('vpn.example.org', PROFILE);
    portal = await PortalStandIn.start({ host: '127.0.0.1', nodeKey, nodeNumber: NODE_NUMBER });
    portal.files = [udpFile(), tcpFile()];

    const config = parseNodeAgentConfig(
      {
        // Tests run side by side in the host's namespace: any free port.
        metrics: { listen: '127.0.0.1:0' },
        apiUrl: portal.apiUrl,
        nodeNumber: NODE_NUMBER,
        nodeKeyFile: 'node.key',
        listen: { port: 0 },
        WireGuard: { interfaceName: lab.interfaceName('wgo'), endpointFile: join(directory, 'endpoints.json') },
        // configDir relative: next to the configuration file.
        OpenVPN: { configDir: 'openvpn', managementDir, preferAes: 'no' },
        refreshIntervalSeconds: 3600,
      },
      join(directory, 'node.json'),
    );
    agent = await startNodeAgent({
      config,
      nodeKey: new Secret(nodeKey),
      logger: pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) }),
      version: 'test',
      runner: node.runner(),
      openVpnRestartDelaysMs: [300],
    });
  });

  after(async () => {
    try {
      for (const device of clients) await device.stop();
      await agent?.stop();
      await portal?.close();
    } finally {
      await lab.cleanup();
      await rm(directory, { recursive: true, force: true });
    }
  });

  test('the agent tells the portal its OpenVPN user, group, cipher preference and socket folder, and keeps the files private', async () => {
    const [first] = portal.serverConfigCalls;
    assert.equal(first?.['vpn_user'], 'nobody');
    assert.equal(first?.['vpn_group'], 'nogroup');
    assert.equal(first?.['prefer_aes'], 'no');
    assert.equal(first?.['management_dir'], managementDir);

    assert.equal((await stat(configDir)).mode & 0o777, 0o700, 'the folder of the server files is 0700');
    assert.equal((await stat(managementDir)).mode & 0o777, 0o700, 'the socket folder is 0700');
    for (const file of portal.files) {
      const path = join(configDir, file.name);
      assert.equal((await stat(path)).mode & 0o777, 0o600, `${file.name} is 0600`);
      assert.equal(await readFile(path, 'utf8'), file.content, `${file.name} is written as the portal sent it`);
      assert.ok(
        existsSync(join(managementDir, file.name.replace(/\.conf$/, '.sock'))),
        `${file.name} has its management socket`,
      );
    }
    assert.equal((await nodeInfo())['o_process_count'], 2, '/i/node counts both OpenVPN processes');
    assert.deepEqual(await connectionList(), [], 'nobody is connected yet');
  });

  test('a client the portal allows connects, reaches the server, and is listed with the addresses it got', async () => {
    const alice = randomCommonName();
    portal.allowed.add(alice);
    const device = await connect(alice);
    await device.waitFor(CONNECTED, 'Initialization Sequence Completed');

    // The portal was asked with the addresses the client then really got.
    assert.deepEqual(connectsOf(alice), [
      {
        profile_id: PROFILE,
        common_name: alice,
        originating_ip: clientAddress,
        ip_four: '198.19.10.2',
        ip_six: 'fd00:10::2',
      },
    ]);
    const tunnel = await client.exec('ip', ['-o', 'address', 'show', 'dev', `cl${String(clientCount)}`]);
    assert.match(tunnel.stdout, /inet 198\.19\.10\.2\/24/);
    assert.match(tunnel.stdout, /inet6 fd00:10::2\/112/);

    const pingFour = await ping('198.19.10.1');
    assert.equal(pingFour.exitCode, 0, pingFour.stdout + pingFour.stderr);
    const pingSix = await ping('fd00:10::1');
    assert.equal(pingSix.exitCode, 0, pingSix.stdout + pingSix.stderr);

    assert.deepEqual(await connectionList(), [{ common_name: alice, ip_four: '198.19.10.2', ip_six: 'fd00:10::2' }]);
    assert.equal((await nodeInfo())['o_client_count'], 1, '/i/node counts the connected client');
  });

  test('disconnect_client ends the tunnel and the end reaches the portal with byte counts', async () => {
    const [listed] = await connectionList();
    assert.ok(listed !== undefined, 'a client is connected');
    const alice = listed.common_name;
    const device = clients.at(-1);
    assert.ok(device !== undefined, 'the device of the connected client is known');
    // The portal deletes the configuration first, so the device cannot come back.
    portal.allowed.delete(alice);

    const answer = await disconnectClient(alice);
    assert.equal(answer.status, 204);

    const [report] = await portal.waitFor(
      () => (disconnectsOf(alice).length > 0 ? disconnectsOf(alice) : undefined),
      'the disconnect of the client',
    );
    assert.equal(report?.['profile_id'], PROFILE);
    assert.equal(report?.['ip_four'], '198.19.10.2');
    assert.equal(report?.['ip_six'], 'fd00:10::2');
    assert.ok(
      Number(report?.['bytes_in']) > 0 && Number(report?.['bytes_out']) > 0,
      `traffic counted: ${JSON.stringify(report)}`,
    );

    // OpenVPN tells the device to reconnect; the portal refuses it now and the device gives up.
    await device.exited();
    assert.match(device.output, AUTH_FAILED);
    assert.deepEqual(await connectionList(), []);
    assert.notEqual((await ping('198.19.10.1')).exitCode, 0, 'no tunnel any more');
  });

  test('disconnect_client answers 204 for a common name nobody uses, and 400 for a missing or malformed one', async () => {
    assert.equal((await disconnectClient(randomCommonName())).status, 204);
    const missing = await daemon('/o/disconnect_client', { method: 'POST', body: new URLSearchParams() });
    assert.equal(missing.status, 400);
    assert.match(((await missing.json()) as { error: string }).error, /common_name/);
    assert.equal((await disconnectClient('with space')).status, 400);
    assert.equal((await disconnectClient('x'.repeat(65))).status, 400);
    const twice = await daemon('/o/disconnect_client', {
      method: 'POST',
      body: new URLSearchParams([
        ['common_name', 'a'],
        ['common_name', 'b'],
      ]),
    });
    assert.equal(twice.status, 400);
  });

  test('a client the portal refuses never completes the connection, and nothing is reported for it', async () => {
    const bob = randomCommonName();
    const device = await connect(bob);
    await device.exited();
    assert.match(device.output, AUTH_FAILED);
    assert.doesNotMatch(device.output, CONNECTED);
    assert.equal(connectsOf(bob).length, 1, 'the portal was asked once');
    await sleep(300);
    assert.deepEqual(disconnectsOf(bob), [], 'a refused client is no connection of the portal');
  });

  test('a certificate of another profile is refused without asking the portal', async () => {
    const carol = randomCommonName();
    portal.allowed.add(carol); // the portal would allow the common name: the OU decides first.
    const device = await connect(carol, { profileId: 'guests' });
    await device.exited();
    assert.match(device.output, AUTH_FAILED);
    assert.deepEqual(connectsOf(carol), [], 'the portal was not asked');
    assert.ok(
      logLines.some((line) => line.includes('its certificate is for another profile') && line.includes('guests')),
      'the refusal is logged with the OU',
    );
  });

  test('while the portal cannot be reached, clients are refused', async () => {
    const dave = randomCommonName();
    portal.allowed.add(dave);
    await portal.goOffline();
    try {
      const device = await connect(dave);
      await device.exited();
      assert.match(device.output, AUTH_FAILED);
      assert.doesNotMatch(device.output, CONNECTED);
    } finally {
      await portal.goOnline();
    }
    assert.ok(
      logLines.some((line) => line.includes('OpenVPN client refused: cannot ask the portal')),
      'the refusal is logged as a warning',
    );

    // Back online, the same device gets in.
    const again = await connect(dave);
    await again.waitFor(CONNECTED, 'Initialization Sequence Completed');
    await again.stop();
    await portal.waitFor(
      () => (disconnectsOf(dave).length > 0 ? true : undefined),
      'the disconnect of the device that left',
    );
  });

  test('an OpenVPN server that dies is restarted, its clients are reported gone, and clients connect again', async () => {
    const erin = randomCommonName();
    portal.allowed.add(erin);
    const first = await connect(erin);
    await first.waitFor(CONNECTED, 'Initialization Sequence Completed');
    const udpPid = pidOf(`${PROFILE}-0.conf`);
    const tcpPid = pidOf(`${PROFILE}-1.conf`);
    assert.ok(udpPid !== null && tcpPid !== null, 'both servers run');

    process.kill(udpPid, 'SIGKILL');
    // Killed: no goodbye from OpenVPN, so the agent reports the end itself (byte counts unknown).
    const [report] = await portal.waitFor(
      () => (disconnectsOf(erin).length > 0 ? disconnectsOf(erin) : undefined),
      "the end of the killed server's client",
    );
    assert.equal(report?.['ip_four'], '198.19.10.2');
    await portal.waitFor(
      () => (logLines.some((line) => line.includes('OpenVPN server restarted')) ? true : undefined),
      'the restart',
    );
    const restartedPid = pidOf(`${PROFILE}-0.conf`);
    assert.ok(
      restartedPid !== null && restartedPid !== udpPid,
      `a new process runs (${String(restartedPid)} after ${udpPid})`,
    );
    assert.equal(pidOf(`${PROFILE}-1.conf`), tcpPid, 'the other server was left alone');

    await first.stop();
    const second = await connect(erin);
    await second.waitFor(CONNECTED, 'Initialization Sequence Completed');
    const pinged = await ping('198.19.10.1');
    assert.equal(pinged.exitCode, 0, pinged.stdout + pinged.stderr);
    await second.stop();
    // The device said goodbye (explicit-exit-notify): that end is reported too.
    await portal.waitFor(
      () => (disconnectsOf(erin).length === 2 ? true : undefined),
      'the end of the second connection',
    );
  });

  test('a changed server file restarts only its own process, and TCP clients connect to the new one', async () => {
    const udpPid = pidOf(`${PROFILE}-0.conf`);
    const tcpPid = pidOf(`${PROFILE}-1.conf`);
    const changed = tcpFile(['mute 20']);
    portal.files = [udpFile(), changed];
    await runningAgent().refresh();

    assert.equal(pidOf(`${PROFILE}-0.conf`), udpPid, 'the unchanged server kept running');
    const newTcpPid = pidOf(`${PROFILE}-1.conf`);
    assert.ok(newTcpPid !== null && newTcpPid !== tcpPid, 'the changed server was restarted');
    assert.equal(await readFile(join(configDir, changed.name), 'utf8'), changed.content);

    const frank = randomCommonName();
    tcpClientName = frank;
    portal.allowed.add(frank);
    const device = await connect(frank, { proto: 'tcp' });
    await device.waitFor(CONNECTED, 'Initialization Sequence Completed');
    assert.equal(connectsOf(frank)[0]?.['ip_four'], '198.19.11.2', 'the TCP process hands out its own range');
    assert.deepEqual(await connectionList(), [{ common_name: frank, ip_four: '198.19.11.2', ip_six: 'fd00:11::2' }]);
  });

  test('a server file the portal no longer sends is stopped and deleted, its clients reported gone', async () => {
    const frank = tcpClientName;
    const tcpPid = pidOf(`${PROFILE}-1.conf`);
    assert.ok(tcpPid !== null, 'the TCP server runs');
    portal.files = [udpFile()];
    await runningAgent().refresh();

    assert.equal(pidOf(`${PROFILE}-1.conf`), null);
    assert.equal(existsSync(join(configDir, `${PROFILE}-1.conf`)), false, 'its file is deleted');
    assert.equal(existsSync(join(managementDir, `${PROFILE}-1.sock`)), false, 'its socket is gone');
    assert.notEqual(spawnSync('kill', ['-0', String(tcpPid)]).status, 0, 'its process is gone');
    // Stopped with SIGTERM, OpenVPN said goodbye to its client: the report has the byte counts.
    const [report] = disconnectsOf(frank);
    assert.ok(
      Number(report?.['bytes_in']) > 0,
      `the client's end was reported with its traffic: ${JSON.stringify(report)}`,
    );
    assert.equal((await nodeInfo())['o_process_count'], 1);
  });

  test('stopping the agent stops every OpenVPN process, and no secret reached the log', async () => {
    const grace = randomCommonName();
    portal.allowed.add(grace);
    const device = await connect(grace);
    await device.waitFor(CONNECTED, 'Initialization Sequence Completed');

    await runningAgent().stop();
    agent = null;
    assert.equal(disconnectsOf(grace).length, 1, 'the connected client was reported gone before stop() returned');
    assert.deepEqual(node.pids(), [], 'no OpenVPN process is left in the node namespace');

    const log = logLines.join('');
    const keyLines = serverCertificate.privateKey.split('\n').filter((line) => !line.startsWith('-----'));
    assert.ok(keyLines.length > 0, 'the server key has a body');
    for (const line of keyLines)
      assert.equal(log.includes(line), false, 'the server private key never appears in the log');
    for (const line of pki.tlsCrypt.split('\n').filter((text) => /^[0-9a-f]{32}$/.test(text))) {
      assert.equal(log.includes(line), false, 'the tls-crypt key never appears in the log');
    }
    assert.equal(log.includes(nodeKey), false, 'the node key never appears in the log');
  });
});
