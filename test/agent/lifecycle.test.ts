// An administrator starts `vpn-portal node --config FILE` on a VPN host (a network namespace
// here) before the portal runs, watches it wait, serve once the portal answers, and stop
// cleanly on SIGTERM, taking its wireguard-go interface with it.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { asNodeNumber, type WireGuardKey } from '../../src/shared/ids.js';
import { KeyStore } from '../../src/keys/key-store.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { freePort } from '../support/free-port.js';
import { NetnsLab, type Namespace } from '../support/netns.js';
import { NodeAgentProcess } from '../support/node-agent-process.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';
import { until } from '../support/until.js';

const NODE = asNodeNumber(2);

describe('running the node agent as a service', () => {
  const lab = new NetnsLab();
  let directory: string;
  let node: Namespace;
  let nodeAddress: string;
  let interfaceName: string;
  /** The portal's data directory; the administrator copies node 2's key from it to the node. */
  let dataDir: string;
  let keys: KeyStore;
  let portalConfig: Partial<PortalConfigFile>;
  let apiUrl: string;
  let portal: TestPortal | undefined;

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'node-agent-lifecycle-'));
    node = await lab.namespace('node');
    const link = lab.subnet();
    await lab.vethPair(
      { namespace: null, address: `${link.first}/30` },
      { namespace: node, address: `${link.second}/30` },
    );
    nodeAddress = link.second;
    interfaceName = lab.interfaceName('wgl');

    // The portal will listen on the host's end of the link; the node is node 2 of one profile.
    const portalPort = await freePort(link.first);
    portalConfig = {
      listen: { host: link.first, port: portalPort },
      adminApi: { allowList: [`${link.first}/32`], trustedProxyList: [] },
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: nodeAddress,
          onNode: 2,
          nodeUrl: `http://${nodeAddress}:41194`,
          wRangeFour: '198.19.1.0/24',
          wRangeSix: 'fd00:1::/64',
        },
      ],
    };
    apiUrl = `http://${link.first}:${portalPort}/vpn-user-portal/node-api.php`;
    dataDir = join(directory, 'portal');
    keys = new KeyStore(join(dataDir, 'keys'));
    // `vpn-portal generate-secrets --node 2` before the portal first starts.
    keys.createNodeKey(NODE);
  });

  after(async () => {
    try {
      await portal?.close();
    } finally {
      await lab.cleanup();
      await rm(directory, { recursive: true, force: true });
    }
  });

  test('the agent waits for the portal, then serves, and SIGTERM removes everything it created', async () => {
    const configFile = join(directory, 'node.json');
    await writeFile(
      configFile,
      JSON.stringify({
        apiUrl,
        nodeNumber: 2,
        nodeKeyFile: keys.nodeKeyPath(NODE),
        listen: { host: nodeAddress, port: 41194 },
        WireGuard: { interfaceName, endpointFile: join(directory, 'endpoints.json') },
      }),
    );

    const agent = new NodeAgentProcess(node, configFile);

    // The portal is not running yet: every failed attempt is logged, and the agent keeps trying.
    await agent.waitFor(
      (line) => line.msg === 'cannot get the server configuration from the portal yet' && line['attempt'] === 2,
      'second failed attempt',
    );
    const failures = agent.withMessage('cannot get the server configuration from the portal yet');
    assert.match(String(failures[0]?.['reason']), /cannot reach the portal at .*ECONNREFUSED/);
    assert.ok(Number(failures[1]?.['retryInMs']) > Number(failures[0]?.['retryInMs']), 'the pause grows');

    portal = await startTestPortal({ dataDir, config: portalConfig });
    await agent.ready();
    assert.equal(
      agent.withMessage('created WireGuard interface with wireguard-go').length,
      1,
      'the log tells which implementation was chosen',
    );
    // Node 2's own WireGuard key: the portal recognised the agent as node 2.
    const serverPublicKey = keys.wireGuardPublicKey(NODE);
    assert.ok(serverPublicKey !== null, "the portal made node 2's WireGuard key");
    assert.equal((await node.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim(), serverPublicKey);

    // The portal's next reconcile pass finds the node; a new configuration lands on the interface.
    await portal.reconcile();
    const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
    assert.equal(created.status, 200, created.text);
    const peer = wireGuardPublicKey(parseWireGuardFile(created.text).interface.get('PrivateKey') as WireGuardKey);
    const peerLine = new RegExp(`${peer.replace(/[+/]/g, '\\$&')}\t198\\.19\\.1\\.2/32`);
    assert.match((await node.exec('wg', ['show', interfaceName, 'allowed-ips'])).stdout, peerLine);

    // wireguard-go dies: the agent starts a new one and configures it again at once.
    const interfaceCreated = agent.withMessage('created WireGuard interface with wireguard-go')[0];
    process.kill(Number(interfaceCreated?.['pid']), 'SIGKILL');
    await agent.waitFor(
      (line) => line.msg === 'WireGuard interface recreated without peers; the portal restores them',
      'recreated',
    );
    assert.equal((await node.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim(), serverPublicKey);
    assert.match(
      (await node.exec('ip', ['-o', 'address', 'show', 'dev', interfaceName])).stdout,
      /inet 198\.19\.1\.1\/24/,
    );
    // …and the portal's next reconcile pass does.
    await portal.reconcile();
    assert.match((await node.exec('wg', ['show', interfaceName, 'allowed-ips'])).stdout, peerLine);

    assert.equal(await agent.stop(), 0);
    assert.notEqual(
      (await node.run('ip', ['link', 'show', 'dev', interfaceName])).exitCode,
      0,
      'the interface is gone',
    );
    assert.equal(existsSync(`/var/run/wireguard/${interfaceName}.sock`), false, 'the control socket is gone');
    assert.deepEqual(node.pids(), [], 'no wireguard-go is left behind');

    const everything = agent.output.join('');
    assert.equal(
      everything.includes(readFileSync(keys.nodeKeyPath(NODE), 'utf8').trim()),
      false,
      'the node key never appears in the log',
    );
    assert.equal(
      everything.includes(readFileSync(keys.wireGuardKeyPath(NODE), 'utf8').trim()),
      false,
      'the WireGuard private key never appears in the log',
    );
  });

  test('an interface that already exists is used as it is and left in place at shut-down', async () => {
    const existing = lab.interfaceName('wge');
    node.spawn('wireguard-go', ['-f', existing], { env: { WG_PROCESS_FOREGROUND: '1' } });
    await until(
      'the prepared interface comes up',
      async () => (await node.run('wg', ['show', existing])).exitCode === 0,
      60_000,
    );
    const configFile = join(directory, 'existing.json');
    await writeFile(
      configFile,
      JSON.stringify({
        apiUrl,
        nodeNumber: 2,
        nodeKeyFile: keys.nodeKeyPath(NODE),
        listen: { host: nodeAddress },
        WireGuard: { interfaceName: existing, endpointFile: join(directory, 'existing-endpoints.json') },
      }),
    );

    portal ??= await startTestPortal({ dataDir, config: portalConfig });
    const agent = new NodeAgentProcess(node, configFile);
    await agent.ready();
    assert.equal(agent.withMessage('using the existing WireGuard interface').length, 1);
    assert.equal(
      (await node.exec('wg', ['show', existing, 'public-key'])).stdout.trim(),
      keys.wireGuardPublicKey(NODE),
    );

    assert.equal(await agent.stop(), 0);
    assert.equal((await node.run('ip', ['link', 'show', 'dev', existing])).exitCode, 0, 'the interface is still there');
  });

  test('a mistake in the configuration stops the agent at once with a message naming it', async () => {
    const configFile = join(directory, 'typo.json');
    await writeFile(configFile, JSON.stringify({ nodeKeyFile: 'node.key', WireGuard: { interfaceName, mtu: 1400 } }));
    const agent = new NodeAgentProcess(node, configFile);
    assert.equal(await agent.exitCode(), 2);
    assert.match(agent.output.join(''), new RegExp(`${configFile}.*unknown key "WireGuard\\.mtu"`));
  });
});
