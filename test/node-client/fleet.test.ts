// The fleet's promise about a node that hangs: the first timeout is paid once, by the calls
// waiting on the node at that moment, and after it no call contacts the node until the probe
// finds it answering; a listing's question gets the node's last answer, marked stale. The node
// is a local HTTP server that stops answering on request (it keeps accepting connections, as a
// frozen process does); the end-to-end version with a stopped agent is test/e2e/hung-node.test.ts.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { HttpNodeDaemon } from '../../src/node-client/daemon-client.js';
import { NodeFleet } from '../../src/node-client/fleet.js';
import { asNodeNumber, type NodeNumber } from '../../src/shared/ids.js';
import { systemClock } from '../../src/shared/time.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';

const TIMEOUT_MS = 1_000;
const NODE = asNodeNumber(0);

interface StandInNode {
  readonly url: string;
  /** Requests that reached the node. */
  readonly paths: string[];
  hangs: boolean;
  /** Answers every change with 500 (an agent that is up but cannot write its interface). */
  refuses: boolean;
}

async function startNode(t: TestContext): Promise<StandInNode> {
  const node: StandInNode = { url: '', paths: [], hangs: false, refuses: false };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    node.paths.push(request.url ?? '');
    if (node.hangs) return;
    if (request.url === '/i/node')
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          rel_load_average: [0],
          load_average: [0],
          cpu_count: 1,
          node_uptime: 1,
          maintenance_mode: false,
          w_peer_count: 0,
          o_client_count: 0,
        }),
      );
    else if (request.url === '/o/connection_list')
      response
        .writeHead(200)
        .end(JSON.stringify({ connection_list: [{ common_name: 'cn-1', ip_four: '10.9.0.2', ip_six: null }] }));
    else if (node.refuses) response.writeHead(500).end('interface not writable');
    else response.writeHead(204).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return Object.assign(node, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

function fleetOf(t: TestContext, urls: ReadonlyMap<NodeNumber, string>): NodeFleet {
  const daemons = new Map(
    [...urls].map(([nodeNumber, url]) => [
      nodeNumber,
      new HttpNodeDaemon({ nodeNumber, url, secret: () => null, timeoutMs: TIMEOUT_MS }),
    ]),
  );
  const fleet = new NodeFleet(daemons, systemClock, pino({ level: 'silent' }));
  t.after(async () => {
    fleet.stop();
    for (const daemon of daemons.values()) await daemon.close();
  });
  return fleet;
}

test('calls waiting on a hung node stop waiting when the first times out, and later calls do not contact it', async (t) => {
  const node = await startNode(t);
  const fleet = fleetOf(t, new Map([[NODE, node.url]]));
  const key = generateWireGuardKeyPair().publicKey;
  node.hangs = true;

  const started = performance.now();
  const timed = async (): Promise<{ result: unknown; endedAt: number }> => {
    const result = await fleet.tryOn(NODE, 'remove_peer', (daemon) => daemon.removePeer(key, 1));
    return { result, endedAt: performance.now() - started };
  };
  const first = timed();
  await sleep(TIMEOUT_MS / 2);
  const second = timed();
  const [one, two] = await Promise.all([first, second]);
  assert.equal(one.result, undefined);
  assert.equal(two.result, undefined);
  assert.ok(fleet.isDown(NODE), 'the node is held for down');
  assert.ok(
    two.endedAt - one.endedAt < TIMEOUT_MS / 4,
    `the second call stopped waiting when the first timed out (${Math.round(one.endedAt)} ms), not after its own timeout (${Math.round(two.endedAt)} ms)`,
  );

  const asked = node.paths.length;
  const later = performance.now();
  assert.equal(await fleet.tryOn(NODE, 'remove_peer', (daemon) => daemon.removePeer(key, 2)), undefined);
  assert.ok(performance.now() - later < TIMEOUT_MS / 4, 'a later call answers at once');
  await sleep(100);
  assert.equal(node.paths.length, asked, 'and never reached the node');
});

test("a listing's question gets a down node's last answer, marked stale; a node that never answered gives none", async (t) => {
  const node = await startNode(t);
  const other = asNodeNumber(1);
  const fleet = fleetOf(
    t,
    new Map([
      [NODE, node.url],
      [other, 'http://127.0.0.1:2'],
    ]),
  );
  const ask = (nodeNumber: NodeNumber) =>
    fleet.current(nodeNumber, 'connection_list', (daemon) => daemon.openVpnConnectionList());
  const clients = [{ commonName: 'cn-1', ipFour: '10.9.0.2', ipSix: null }];

  assert.deepEqual(await ask(NODE), { stale: false, answer: clients });
  node.hangs = true;
  assert.deepEqual(await ask(NODE), { stale: true, answer: clients }, 'after the timeout: the last answer');
  const asked = node.paths.length;
  const started = performance.now();
  assert.deepEqual(await ask(NODE), { stale: true, answer: clients }, 'held for down: the last answer at once');
  assert.ok(performance.now() - started < TIMEOUT_MS / 4);
  assert.equal(node.paths.length, asked, 'without asking the node');

  assert.deepEqual(await ask(other), { stale: true, answer: undefined });
});

test('a revocation glances at a node held for down: a hung one costs it at most the glance, one that is back takes it at once', async (t) => {
  const node = await startNode(t);
  const fleet = fleetOf(t, new Map([[NODE, node.url]]));
  node.hangs = true;
  assert.equal(
    await fleet.tryOn(NODE, 'remove_peer', (daemon) => daemon.removePeer(generateWireGuardKeyPair().publicKey, 1)),
    undefined,
  );
  assert.equal(fleet.isDown(NODE), true, 'the first timeout holds the node for down');

  const started = performance.now();
  assert.equal(await fleet.glance(NODE, 200), false, 'a hung node does not answer the glance');
  assert.ok(
    performance.now() - started < 600,
    `the glance gave up after ${Math.round(performance.now() - started)} ms`,
  );
  assert.equal(node.paths.at(-1), '/i/node', 'only the harmless question was sent, never a removal');

  // Back before the once-a-second probe noticed: the glance finds it, and the removal goes through.
  node.hangs = false;
  assert.equal(await fleet.glance(NODE, 1_000), true);
  assert.equal(fleet.isDown(NODE), false);
  const key = generateWireGuardKeyPair().publicKey;
  assert.notEqual(
    await fleet.tryOn(NODE, 'remove_peer', async (daemon) => ({ answer: await daemon.removePeer(key, 2) })),
    undefined,
  );
  assert.equal(node.paths.at(-1), '/w/remove_peer');
});

test('a node that answers a change with an error is up: later calls still reach it, and a reconcile of it is asked for', async (t) => {
  const node = await startNode(t);
  const fleet = fleetOf(t, new Map([[NODE, node.url]]));
  const reconciles: string[] = [];
  fleet.onReconcileNeeded((nodeNumber, reason) => reconciles.push(`${nodeNumber}: ${reason}`));
  node.refuses = true;

  assert.equal(
    await fleet.tryOn(NODE, 'remove_peer', (daemon) => daemon.removePeer(generateWireGuardKeyPair().publicKey, 1)),
    undefined,
  );
  assert.equal(fleet.isDown(NODE), false, 'an answer, even an error, is not a node that is down');
  assert.deepEqual(
    reconciles,
    ['0: refused a change'],
    'the database holds the change; a pass brings the node in line',
  );

  node.refuses = false;
  const asked = node.paths.length;
  const key = generateWireGuardKeyPair().publicKey;
  assert.notEqual(
    await fleet.tryOn(NODE, 'remove_peer', async (daemon) => ({ answer: await daemon.removePeer(key, 2) })),
    undefined,
  );
  assert.equal(node.paths.length, asked + 1, 'the next call went to the node at once');
});
