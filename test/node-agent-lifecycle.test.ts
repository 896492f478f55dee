// An administrator starts `vpn-portal node --config FILE` on a VPN host (a network namespace
// here) before the portal is ready, watches it wait, serve once the portal answers, and stop
// cleanly on SIGTERM, taking its wireguard-go interface with it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../src/wireguard/keys.js';
import { isRoot, NetnsLab, type Namespace } from './support/netns.js';
import { NodeAgentProcess } from './support/node-agent-process.js';
import { startNodeApiStub, type NodeApiStub } from './support/node-api-stub.js';

describe('running the node agent as a service', { skip: !isRoot() && 'needs root' }, () => {
  const lab = new NetnsLab();
  const nodeKey = randomBytes(32).toString('hex');
  const serverKeys = generateWireGuardKeyPair();
  let directory: string;
  let node: Namespace;
  let portal: NodeApiStub;
  let interfaceName: string;
  let nodeAddress: string;
  const workingAnswer = {
    json: { wireguard: { privateKey: serverKeys.privateKey, listenPort: 51820, mtu: null, addressList: ['198.19.1.1/24', 'fd00:1::1/64'] } },
  };

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'node-agent-lifecycle-'));
    node = await lab.namespace('node');
    const link = lab.subnet();
    await lab.vethPair({ namespace: null, address: `${link.first}/30` }, { namespace: node, address: `${link.second}/30` });
    nodeAddress = link.second;
    interfaceName = lab.interfaceName('wgl');
    portal = await startNodeApiStub({ nodeKey, nodeNumber: 2, host: link.first, initialAnswer: { status: 503, error: 'portal is starting' } });
  });

  after(async () => {
    await lab.cleanup();
    await portal?.close();
    await rm(directory, { recursive: true, force: true });
  });

  test('the agent waits for the portal, then serves, and SIGTERM removes everything it created', async () => {
    await writeFile(join(directory, 'node.key'), `${nodeKey}\n`, { mode: 0o600 });
    const configFile = join(directory, 'node.json');
    await writeFile(
      configFile,
      JSON.stringify({
        apiUrl: portal.apiUrl,
        nodeNumber: 2,
        nodeKeyFile: 'node.key',
        listen: { host: nodeAddress, port: 41194 },
        WireGuard: { interfaceName },
      }),
    );

    const agent = new NodeAgentProcess(node, configFile);

    // The portal is not ready: every failed attempt is logged, and the agent keeps trying.
    await agent.waitFor((line) => line.msg === 'cannot get the server configuration from the portal yet' && line['attempt'] === 2, 'second failed attempt');
    const failures = agent.withMessage('cannot get the server configuration from the portal yet');
    assert.match(String(failures[0]?.['reason']), /503.*portal is starting/);
    assert.ok(Number(failures[1]?.['retryInMs']) > Number(failures[0]?.['retryInMs']), 'the pause grows');

    portal.answer(workingAnswer);
    await agent.ready();
    assert.equal(agent.withMessage('created WireGuard interface with wireguard-go').length, 1, 'the log tells which implementation was chosen');
    assert.ok(portal.requests.every((request) => request.nodeNumber === '2'), 'every request names node 2');

    const peer = generateWireGuardKeyPair().publicKey;
    const added = await fetch(`http://${nodeAddress}:41194/w/add_peer`, {
      method: 'POST',
      headers: { authorization: `Bearer ${nodeKey}` },
      body: new URLSearchParams([['public_key', peer], ['ip_net', '198.19.1.2/32'], ['ip_net', 'fd00:1::2/128']]),
    });
    assert.equal(added.status, 204);
    assert.match((await node.exec('wg', ['show', interfaceName, 'allowed-ips'])).stdout, new RegExp(`${peer.replace(/[+/]/g, '\\$&')}\t198.19.1.2/32`));

    // wireguard-go dies: the agent starts a new one and configures it again at once.
    const created = agent.withMessage('created WireGuard interface with wireguard-go')[0];
    process.kill(Number(created?.['pid']), 'SIGKILL');
    await agent.waitFor((line) => line.msg === "WireGuard interface recreated without peers; the portal's next reconcile restores them", 'recreated');
    assert.equal((await node.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim(), serverKeys.publicKey);
    assert.match((await node.exec('ip', ['-o', 'address', 'show', 'dev', interfaceName])).stdout, /inet 198\.19\.1\.1\/24/);

    assert.equal(await agent.stop(), 0);
    assert.notEqual((await node.run('ip', ['link', 'show', 'dev', interfaceName])).exitCode, 0, 'the interface is gone');
    assert.equal(existsSync(`/var/run/wireguard/${interfaceName}.sock`), false, 'the control socket is gone');
    assert.deepEqual(node.pids(), [], 'no wireguard-go is left behind');

    const everything = agent.output.join('');
    assert.equal(everything.includes(nodeKey), false, 'the node key never appears in the log');
    assert.equal(everything.includes(serverKeys.privateKey), false, 'the WireGuard private key never appears in the log');
  });

  test('an interface that already exists is used as it is and left in place at shut-down', async () => {
    const existing = lab.interfaceName('wge');
    node.spawn('wireguard-go', ['-f', existing], { env: { WG_PROCESS_FOREGROUND: '1' } });
    for (let tries = 0; (await node.run('wg', ['show', existing])).exitCode !== 0; tries += 1) {
      if (tries > 100) throw new Error('the prepared interface did not come up');
      await sleep(50);
    }
    const configFile = join(directory, 'existing.json');
    await writeFile(
      configFile,
      JSON.stringify({ apiUrl: portal.apiUrl, nodeNumber: 2, nodeKeyFile: 'node.key', listen: { host: nodeAddress }, WireGuard: { interfaceName: existing } }),
    );

    portal.answer(workingAnswer);
    const agent = new NodeAgentProcess(node, configFile);
    await agent.ready();
    assert.equal(agent.withMessage('using the existing WireGuard interface').length, 1);
    assert.equal((await node.exec('wg', ['show', existing, 'public-key'])).stdout.trim(), serverKeys.publicKey);

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
