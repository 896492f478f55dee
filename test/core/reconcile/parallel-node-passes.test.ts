// A full reconcile pass reaches every node, but holds no more than PARALLEL_NODE_PASSES nodes'
// peer lists at once: with fifty nodes of 20,000 peers each, all at once ran the portal out of
// its capped heap. The nodes are vpn-daemon servers of the test's own that keep each peer_list
// answer back for a moment, so a pass that asked more nodes at once would be seen holding them.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { PARALLEL_NODE_PASSES } from '../../../src/core/reconcile/pass.js';
import { VPN_DAEMON_PATHS } from '../../../src/protocol/vpn-daemon.js';
import { startTestPortal } from '../../support/test-portal.js';

const NODES = PARALLEL_NODE_PASSES + 2;

test('a full pass asks every node for its peers, never more nodes at once than its limit', async (t) => {
  let waiting: (() => void)[] = [];
  let mostAtOnce = 0;
  let answered = 0;
  let allAnswered: () => void = () => {};
  const everyNodeAnswered = new Promise<void>((resolve) => {
    allAnswered = resolve;
  });
  const answerWaiting = (): void => {
    const now = waiting;
    waiting = [];
    for (const answer of now) answer();
  };
  const servers = await Promise.all(
    Array.from({ length: NODES }, async () => {
      const server = http.createServer((request, response) => {
        const json = (body: unknown): void => {
          response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        };
        const path = new URL(request.url ?? '/', 'http://node').pathname;
        if (path === VPN_DAEMON_PATHS.nodeInfo) {
          return json({
            rel_load_average: [0, 0, 0],
            load_average: [0, 0, 0],
            cpu_count: 2,
            node_uptime: 1,
            maintenance_mode: false,
            w_peer_count: 0,
            o_client_count: 0,
            v: 'test',
          });
        }
        if (path === VPN_DAEMON_PATHS.peerList) {
          waiting.push(() => {
            json({ peer_list: [] });
            answered++;
            if (answered === NODES) allAnswered();
          });
          mostAtOnce = Math.max(mostAtOnce, waiting.length);
          // The answers go once the pass's limit is reached (or every node still to come has
          // asked), a little later: long enough for a pass without a limit to ask the rest.
          if (waiting.length === Math.min(PARALLEL_NODE_PASSES, NODES - answered)) setTimeout(answerWaiting, 50);
          return;
        }
        if (path === VPN_DAEMON_PATHS.connectionList) return json({ connection_list: [] });
        response.writeHead(404).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return server;
    }),
  );
  t.after(() => {
    for (const server of servers) server.close();
  });
  const portal = await startTestPortal({
    config: {
      ProfileList: servers.map((server, node) => ({
        profileId: `p${node}`,
        displayName: `Profile ${node}`,
        hostName: 'vpn.example.org',
        wRangeFour: `10.${60 + node}.0.0/24`,
        wRangeSix: `fd${60 + node}::/64`,
        onNode: [node],
        nodeUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      })),
    },
  });
  t.after(() => portal.close());
  await everyNodeAnswered;
  assert.equal(answered, NODES, 'every node was asked for its peers');
  assert.equal(mostAtOnce, PARALLEL_NODE_PASSES, `at most ${PARALLEL_NODE_PASSES} nodes at once, and that many`);
});
