// A node that hangs (its agent stopped with SIGSTOP, its wireguard-go still passing traffic)
// while another node serves the same profile. After the first call that waits for it in vain,
// the portal holds it for down: no Admin API call waits for it any more, listings show its
// last known state and name it in VPN-Portal-Stale-Nodes, creates go to the other node, and
// what was revoked meanwhile leaves the node within seconds of it answering again (the probe
// sees it back and the recovery pass removes it), without a periodic pass.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { STALE_NODES_HEADER } from '../../src/protocol/admin-api.js';
import { asNodeNumber, type WireGuardKey } from '../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import type { ApiResponse } from '../support/test-portal.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

/** What the portal may still send a node it holds for down: is it back? (src/node-client/fleet.ts) */
const ASKED_OF_A_NODE_HELD_DOWN = new Set(['probe', 'glance']);
/** How soon after SIGCONT nothing revoked may be left on the node. */
const RECOVERY_LIMIT_MS = 5_000;

/** The value of one sample, e.g. `vpn_portal_node_up{node="0"}`; undefined when absent. */
async function metric(lab: TunnelLab, series: string): Promise<number | undefined> {
  const url = lab.portal.portal.metricsUrl;
  assert.ok(url !== null, 'metrics are served');
  const line = (await (await fetch(url)).text()).split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** `vpn_portal_node_requests_total` of node 0, by request. */
async function requestsToNodeZero(lab: TunnelLab): Promise<Map<string, number>> {
  const url = lab.portal.portal.metricsUrl;
  assert.ok(url !== null, 'metrics are served');
  const counts = new Map<string, number>();
  for (const line of (await (await fetch(url)).text()).split('\n')) {
    const match = /^vpn_portal_node_requests_total\{node="0",request="([^"]+)"\} (\d+)$/.exec(line);
    if (match?.[1] !== undefined) counts.set(match[1], Number(match[2]));
  }
  return counts;
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

describe('a hung node slows no Admin API call, and what was revoked meanwhile leaves it when it answers again', () => {
  let lab: TunnelLab;
  let alice: { publicKey: string };
  /** user id → public key of its one configuration, all on node 0. */
  const onNodeZero = new Map<string, string>();

  /** POST /create; the configuration's public key and the node it landed on (by its address range). */
  const create = async (userId: string): Promise<{ response: ApiResponse; publicKey: string; nodeNumber: 0 | 1 }> => {
    const response = await lab.portal.post('/create', { user_id: userId, profile_id: LAB_PROFILE });
    assert.equal(response.status, 200, response.text);
    const file = parseWireGuardFile(response.text);
    const address = file.interface.get('Address') ?? '';
    return {
      response,
      publicKey: wireGuardPublicKey(file.interface.get('PrivateKey') as WireGuardKey),
      nodeNumber: address.startsWith('198.19.44.') ? 0 : 1,
    };
  };

  const setMaintenance = async (on: boolean): Promise<void> => {
    const second = lab.secondNode;
    const config = JSON.parse(await readFile(second.agentConfigFile, 'utf8')) as Record<string, unknown>;
    await writeFile(second.agentConfigFile, JSON.stringify({ ...config, maintenanceMode: on }));
    second.agent.child.kill('SIGHUP');
    const nodes = lab.portal.portal.ctx.nodes;
    for (let tries = 0; tries < 100 && nodes.isInMaintenance(asNodeNumber(1)) !== on; tries++) await sleep(100);
    assert.equal(
      nodes.isInMaintenance(asNodeNumber(1)),
      on,
      `the portal sees node 1 ${on ? 'in' : 'out of'} maintenance`,
    );
  };

  before(async () => {
    // The periodic pass is far away: only the probe and the recovery pass it sets off can help.
    lab = await startTunnelLab({ secondNode: true, portalConfig: { reconcileInterval: 'PT1H' } });
    await lab.portal.reconcile();
    // Node 1 drained for a moment, so that everything made here lands on node 0, the one the device reaches.
    await setMaintenance(true);
    alice = await lab.provisionDevice('alice', 'Laptop');
    for (let index = 1; index <= 15; index++)
      onNodeZero.set(`user-${index}`, (await create(`user-${index}`)).publicKey);
    await setMaintenance(false);
    assert.ok(await lab.ping(10), 'the tunnel passes');
    const listed = await lab.portal.get('/connected_users');
    assert.deepEqual(listed.json(), { connected_users: { [LAB_PROFILE]: ['alice'] } });
    assert.equal(listed.headers.get(STALE_NODES_HEADER), null, 'every node answered');
  });

  after(async () => {
    await lab?.close();
  });

  test('while node 0 is stopped, no call sends it anything after its first timeout but the question whether it is back; 5 s after SIGCONT nothing revoked is on it', async (t) => {
    const agentPid = lab.agent.child.pid;
    assert.ok(agentPid !== undefined);
    const revoked: string[] = [];
    const kept: string[] = [];
    const durations: { call: string; ms: number }[] = [];
    const timed = async <T>(call: string, run: () => Promise<T>): Promise<T> => {
      const started = performance.now();
      const result = await run();
      durations.push({ call, ms: performance.now() - started });
      return result;
    };
    const expect = (response: ApiResponse, status: number): ApiResponse => {
      assert.equal(response.status, status, response.text);
      return response;
    };

    process.kill(agentPid, 'SIGSTOP');
    let resumedAt: number;
    try {
      // The first call that needs node 0 waits for it until the node timeout (3 s), once; a loaded machine may add a little.
      const first = await timed('first', () => lab.portal.get('/connected_users'));
      assert.ok((durations[0]?.ms ?? 0) < 5_500, `the first call took ${Math.round(durations[0]?.ms ?? 0)} ms`);
      assert.deepEqual(first.json(), { connected_users: { [LAB_PROFILE]: ['alice'] } }, 'node 0 as it last answered');
      assert.equal(first.headers.get(STALE_NODES_HEADER), '0');
      assert.equal(await metric(lab, 'vpn_portal_node_up{node="0"}'), 0, 'node 0 is down');
      assert.equal(await metric(lab, 'vpn_portal_node_up{node="1"}'), 1, 'node 1 is up');
      durations.length = 0;
      const sentBefore = await requestsToNodeZero(lab);

      const users = [...onNodeZero.keys()];
      let made = 0;
      for (let round = 0; round < 4; round++) {
        for (let index = 0; index < 3; index++) {
          made++;
          const created = await timed('create', () => create(`new-${made}`));
          assert.equal(created.nodeNumber, 1, 'a create goes to the node that answers');
        }
        const [disabled, deleted, destroyed] = users.splice(0, 3) as [string, string, string];
        expect(await timed('disable_user', () => lab.portal.post('/disable_user', { user_id: disabled })), 204);
        revoked.push(onNodeZero.get(disabled) ?? '');
        expect(
          await timed('delete_connection', () =>
            lab.portal.post('/delete_connection', { user_id: deleted, connection_id: onNodeZero.get(deleted) ?? '' }),
          ),
          204,
        );
        revoked.push(onNodeZero.get(deleted) ?? '');
        expect(await timed('destroy', () => lab.portal.post('/destroy', { user_id: destroyed })), 204);
        revoked.push(onNodeZero.get(destroyed) ?? '');
        for (const call of ['/connected_users', '/connection_list']) {
          for (const showAll of ['off', 'on']) {
            const listed = expect(await timed(call.slice(1), () => lab.portal.get(call, { show_all: showAll })), 200);
            // show_all=on asks no WireGuard node: the database's view is complete, nothing is stale.
            assert.equal(
              listed.headers.get(STALE_NODES_HEADER),
              showAll === 'off' ? '0' : null,
              `${call}?show_all=${showAll}`,
            );
          }
        }
        expect(
          await timed('user_configuration_list', () =>
            lab.portal.get('/user_configuration_list', { user_id: `new-${made}` }),
          ),
          200,
        );
        expect(await timed('users', () => lab.portal.get('/users')), 200);
        expect(await timed('disabled_users', () => lab.portal.get('/disabled_users')), 200);
      }
      expect(await timed('disable_user', () => lab.portal.post('/disable_user', { user_id: 'alice' })), 204);
      revoked.push(alice.publicKey);
      // Disabled and enabled again while the node hangs: its peer belongs on the node.
      const [flipped] = users.splice(0, 1) as [string];
      expect(await timed('disable_user', () => lab.portal.post('/disable_user', { user_id: flipped })), 204);
      expect(await timed('enable_user', () => lab.portal.post('/enable_user', { user_id: flipped })), 204);
      kept.push(onNodeZero.get(flipped) ?? '', ...users.map((user) => onNodeZero.get(user) ?? ''));
      const stillListed = await lab.portal.get('/connected_users');
      assert.deepEqual(
        stillListed.json(),
        { connected_users: { [LAB_PROFILE]: [] } },
        'a disabled user is not listed, whatever the node last said',
      );
      const onInterface = await lab.peersOnNode();
      assert.deepEqual(
        revoked.filter((key) => !onInterface.has(key)),
        [],
        'what was revoked while the agent was stopped is still on its interface (nothing reached it)',
      );
      // A call that waited for the hung node would have sent it its request first.
      const sentDuring = [...(await requestsToNodeZero(lab))]
        .filter(([request]) => !ASKED_OF_A_NODE_HELD_DOWN.has(request))
        .filter(([request, count]) => count !== (sentBefore.get(request) ?? 0));
      assert.deepEqual(sentDuring, [], 'no call sent node 0 a request while it was held for down');
    } finally {
      process.kill(agentPid, 'SIGCONT');
      resumedAt = performance.now();
    }

    const sorted = durations.map((entry) => entry.ms).sort((a, b) => a - b);
    const p99 = percentile(sorted, 0.99);
    const slowest = durations.reduce((worst, entry) => (entry.ms > worst.ms ? entry : worst));
    // The figure, not a bound (a loaded machine is slow without anything waiting for the node):
    // bench/hung-node.ts measures it against its 0.5 s target.
    t.diagnostic(
      `${durations.length} calls while node 0 hung: p99 ${Math.round(p99)} ms, median ${Math.round(percentile(sorted, 0.5))} ms, slowest ${slowest.call} ${Math.round(slowest.ms)} ms`,
    );

    let left: string[] = revoked;
    while (performance.now() - resumedAt < RECOVERY_LIMIT_MS) {
      const peers = await lab.peersOnNode();
      left = revoked.filter((key) => peers.has(key));
      if (left.length === 0) break;
      await sleep(100);
    }
    assert.deepEqual(left, [], `${left.length} revoked peer(s) still on node 0 ${RECOVERY_LIMIT_MS} ms after SIGCONT`);
    t.diagnostic(
      `every revoked peer was gone from node 0 ${Math.round(performance.now() - resumedAt)} ms after SIGCONT`,
    );
    const peers = await lab.peersOnNode();
    assert.deepEqual(
      kept.filter((key) => !peers.has(key)),
      [],
      'the configurations not revoked stay, the one enabled again too',
    );
    assert.equal(await lab.ping(2), false, "alice's tunnel passes no more");

    const listed = await lab.portal.get('/connected_users');
    assert.equal(listed.headers.get(STALE_NODES_HEADER), null, 'node 0 answers again');
    assert.equal(await metric(lab, 'vpn_portal_node_up{node="0"}'), 1);
  });
});
