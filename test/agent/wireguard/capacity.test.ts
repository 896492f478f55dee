// wireguard-go holds at most 65,536 peers per interface. A node agent that runs wireguard-go
// (kernel WireGuard is not available here) refuses, at start, ranges that could need more, and
// names the profile and the node, instead of failing one create in a few months.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NodeAgentProcess } from '../../support/node-agent-process.js';
import { startTunnelLab } from '../../support/tunnel-lab.js';

test('an agent on wireguard-go refuses to start with ranges that could hold more than 65,536 clients, naming profile and node', async (t) => {
  const lab = await startTunnelLab({
    client: false,
    startAgent: false,
    profile: { wRangeFour: '10.200.0.0/15', wRangeSix: 'fd00:200::/64' },
  });
  t.after(lab.close);
  const agent = new NodeAgentProcess(lab.node, lab.agentConfigFile);
  const code = await agent.exitCode();
  assert.notEqual(code, 0, 'the agent did not start');
  assert.match(
    agent.output.join(''),
    /the WireGuard ranges of node 0 hold 131069 clients \(employees \(131069\)\), more than wireguard-go holds \(65536\)/,
  );
  assert.equal(
    (await lab.node.run('ip', ['link', 'show', 'dev', lab.nodeInterface])).exitCode,
    1,
    'and left no interface behind',
  );
});
