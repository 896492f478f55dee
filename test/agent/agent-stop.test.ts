// An agent that stops takes down what it set up (the ProxyGuard relay, the NAT table, the
// WireGuard interface) and sets none of it up again: a refresh asked for while it stops, or
// after (a check-in after a lost interface, a caller of `refresh`), finds it stopped.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { startNodeAgent } from '../../src/agent/agent.js';
import { parseNodeAgentConfig } from '../../src/agent/config.js';
import { readNodeKey } from '../../src/agent/node-key.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { freePort } from '../support/free-port.js';
import { NetnsLab } from '../support/netns.js';
import { startTestPortal, UNREACHABLE_NODE } from '../support/test-portal.js';

const logger = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });

/** Whether something accepts TCP connections at the address. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

test('a refresh asked for while the agent stops, or after, sets up neither relay, NAT nor interface again', async (t) => {
  const lab = new NetnsLab();
  const dataDir = await mkdtemp(join(tmpdir(), 'node-agent-stop-'));
  t.after(async () => {
    await lab.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });
  const portal = await startTestPortal({
    dataDir,
    config: {
      WireGuard: { enableProxy: true },
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '198.19.8.0/24',
          wRangeSix: 'fd00:8::/64',
          nodeUrl: UNREACHABLE_NODE,
        },
      ],
    },
  });
  t.after(() => portal.close());
  const node = await lab.namespace('node');
  const interfaceName = lab.interfaceName('wgs');
  const relayPort = await freePort();
  const config = parseNodeAgentConfig(
    {
      apiUrl: portal.nodeApiUrl,
      nodeKeyFile: portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)),
      listen: { host: '127.0.0.1', port: 0 },
      WireGuard: { interfaceName, endpointFile: join(dataDir, 'endpoints.json') },
      ProxyGuard: { listen: { host: '127.0.0.1', port: relayPort } },
      nat: true,
    },
    'node.json',
  );
  const nodeKey = (await readNodeKey(config.nodeKeyFile)).key;
  const agent = await startNodeAgent({ config, nodeKey, logger, version: 'test', runner: node.runner() });
  assert.ok(await listening(relayPort), 'the relay serves WireGuard over TCP');
  assert.match((await node.exec('nft', ['list', 'tables'])).stdout, /vpn_portal_nat/, 'the NAT table is set');

  // A refresh comes as the agent stops, and one more after it stopped.
  const stopping = agent.stop();
  const during = agent.refresh();
  await stopping;
  await during;
  await agent.refresh();

  assert.equal(await listening(relayPort), false, 'no relay listens again');
  assert.equal(agent.proxyGuardRelay, null);
  assert.doesNotMatch((await node.exec('nft', ['list', 'tables'])).stdout, /vpn_portal_nat/, 'no NAT table again');
  const link = await node.run('ip', ['link', 'show', 'dev', interfaceName]);
  assert.notEqual(link.exitCode, 0, `no interface again: ${link.stdout}`);
});
