// The node agent asks the portal for its configuration before it serves the vpn-daemon protocol,
// and the kernel picks that request's local port. Here the node's kernel may pick only the
// daemon's own port and the next (the daemon's first, as its parity comes first): the agent
// still comes up, serving on its port, and the portal sees it answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber } from '../../src/shared/ids.js';
import { startTunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

const DAEMON_PORT = 41194;

test('an agent whose first request to the portal would take the daemon’s port as its own still serves on that port', async (t) => {
  const lab = await startTunnelLab({ startAgent: false, client: false });
  t.after(lab.close);
  await lab.node.exec('sysctl', ['-q', '-w', `net.ipv4.ip_local_port_range=${DAEMON_PORT} ${DAEMON_PORT + 1}`]);

  const agent = await lab.startAgent();
  assert.equal(agent.child.exitCode, null, 'the agent runs');
  const { stdout } = await lab.node.exec('ss', ['-tnH', 'state', 'listening', `( sport = :${DAEMON_PORT} )`]);
  assert.match(stdout, new RegExp(`${new URL(lab.nodeUrl).hostname.replaceAll('.', '\\.')}:${DAEMON_PORT}\\b`));
  await until('the portal sees node 0 answer', async () => !lab.portal.portal.ctx.nodes.isDown(asNodeNumber(0)));
});
