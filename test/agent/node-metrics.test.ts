// The node agent's side door: Prometheus metrics of its WireGuard peers, writes and interface traffic,
// /healthz and /readyz, on metrics.listen, while a real device sends through the tunnel.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTunnelLab } from '../support/tunnel-lab.js';

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('the agent serves metrics of its peers, online peers, peer writes and interface bytes, and health, on its own listen address', async (t) => {
  const lab = await startTunnelLab({
    agentConfig: ({ nodeAddressForPortal }) => ({ metrics: { listen: `${nodeAddressForPortal}:9467` } }),
  });
  t.after(lab.close);
  const logged = lab.agent.lines.find((line) => typeof line.msg === 'string' && line.msg.startsWith('metrics at '));
  assert.ok(logged !== undefined, 'the metrics address is logged at start');
  const base = String(logged.msg)
    .slice('metrics at '.length)
    .replace(/\/metrics$/, '');
  assert.equal(base, `http://${lab.nodeUrl.replace(/^http:\/\/|:41194$/g, '')}:9467`);

  await lab.portal.reconcile();
  await lab.provisionDevice('alice', 'laptop');
  assert.ok(await lab.ping(10), 'the device reaches the node');

  const response = await fetch(`${base}/metrics`);
  assert.equal(response.status, 200);
  const text = await response.text();
  const name = lab.nodeInterface;
  assert.equal(sample(text, `vpn_node_wireguard_peers{interface="${name}"}`), 1);
  assert.equal(sample(text, `vpn_node_wireguard_peers_online{interface="${name}"}`), 1);
  assert.ok((sample(text, `vpn_node_interface_receive_bytes{interface="${name}"}`) ?? 0) > 0, 'the ping was counted');
  assert.ok((sample(text, `vpn_node_interface_transmit_bytes{interface="${name}"}`) ?? 0) > 0);
  assert.equal(sample(text, 'vpn_node_proxyguard_tunnels'), 0, 'no relay runs without enableProxy');
  // The device's peer was written through wireguard-go's control socket, not with `wg set`.
  assert.ok(
    (sample(text, `vpn_node_wireguard_peer_writes_total{interface="${name}",method="uapi"}`) ?? 0) >= 1,
    'the peer was written',
  );
  assert.equal(sample(text, `vpn_node_wireguard_peer_writes_total{interface="${name}",method="wg"}`), 0);
  assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { status: 'ok' });
  assert.equal((await fetch(`${base}/readyz`)).status, 200);
  // The vpn-daemon's Bearer token is not needed here, and not accepted as a way in either.
  assert.equal((await fetch(`${base}/w/peer_list`)).status, 404);
});
