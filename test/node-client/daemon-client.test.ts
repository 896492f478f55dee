// The portal's vpn-daemon client against a server that speaks the protocol as eduVPN's
// vpn-daemon does (plain HTTP/1.1, form bodies): pushes reuse a few kept-open connections
// instead of one per call, send exactly the fields the daemon reads, and fail fast and clearly
// when the node does not answer, or answers far too much.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { HttpNodeDaemon, NodeDaemonError } from '../../src/node-client/daemon-client.js';
import { parseAddPeersForm } from '../../src/protocol/vpn-daemon.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { isOnline } from '../../src/shared/online.js';
import { formatAtom } from '../../src/shared/time.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { ABOVE_FIELD_PRIME_KEY, bit255Twin } from '../support/device-keys.js';
import { startEndlessBody } from '../support/endless-body.js';

interface StandIn {
  readonly url: string;
  readonly requests: { method: string; path: string; authorization: string | undefined; body: string }[];
  /** Every TCP connection the server accepted. */
  readonly sockets: Socket[];
  server: Server;
}

async function startStandIn(
  t: TestContext,
  answer: (request: IncomingMessage, response: ServerResponse, body: string) => void,
): Promise<StandIn> {
  const standIn: StandIn = { url: '', requests: [], sockets: [], server: createServer() };
  standIn.server.on('connection', (socket: Socket) => standIn.sockets.push(socket));
  standIn.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      standIn.requests.push({
        method: request.method ?? '',
        path: request.url ?? '',
        authorization: request.headers.authorization,
        body,
      });
      answer(request, response, body);
    });
  });
  standIn.server.listen(0, '127.0.0.1');
  await once(standIn.server, 'listening');
  t.after(() => {
    standIn.server.closeAllConnections();
    standIn.server.close();
  });
  return { ...standIn, url: `http://127.0.0.1:${(standIn.server.address() as AddressInfo).port}` };
}

const noContent = (_request: IncomingMessage, response: ServerResponse) => {
  response.writeHead(204).end();
};

test('200 add_peer calls, 16 at a time, travel over at most 16 kept-open connections with the fields vpn-daemon reads', async (t) => {
  const standIn = await startStandIn(t, noContent);
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(0),
    url: standIn.url,
    secret: () => 'node-secret',
    timeoutMs: 3_000,
    connections: 16,
  });
  t.after(() => daemon.close());

  const keys = Array.from({ length: 200 }, () => generateWireGuardKeyPair().publicKey);
  for (let start = 0; start < keys.length; start += 16) {
    await Promise.all(
      keys
        .slice(start, start + 16)
        .map((key, index) =>
          daemon.addPeer(key, [`10.0.0.${start + index}/32`, `fd00::${start + index}/128`], start + index),
        ),
    );
  }

  assert.equal(standIn.requests.length, 200);
  assert.ok(standIn.sockets.length <= 16, `${standIn.sockets.length} connections for 200 calls`);
  const [first] = standIn.requests;
  assert.equal(first?.method, 'POST');
  assert.equal(first?.path, '/w/add_peer');
  assert.equal(first?.authorization, 'Bearer node-secret');
  const form = new URLSearchParams(first?.body);
  assert.equal(form.get('public_key'), keys[0]);
  assert.deepEqual(form.getAll('ip_net'), ['10.0.0.0/32', 'fd00::0/128']);
  assert.equal(form.get('revision'), '0');
});

test('addPeers sends one add_peers request that the agent reads as the same peers; nodeInfo tells whether the node has the call', async (t) => {
  const info = { node_uptime: 10, maintenance_mode: false };
  let advertised: Record<string, unknown> = info;
  const standIn = await startStandIn(t, (request, response) => {
    if (request.url === '/i/node') response.writeHead(200).end(JSON.stringify(advertised));
    else response.writeHead(204).end();
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(0),
    url: standIn.url,
    secret: () => 'node-secret',
    timeoutMs: 3_000,
  });
  t.after(() => daemon.close());
  // eduVPN's vpn-daemon does not advertise it; our agent does.
  assert.equal((await daemon.nodeInfo()).addPeersMax, null);
  advertised = { ...info, add_peers_max: 256 };
  assert.equal((await daemon.nodeInfo()).addPeersMax, 256);

  const peers = Array.from({ length: 3 }, (_, index) => ({
    publicKey: generateWireGuardKeyPair().publicKey,
    ipNet: [`10.0.0.${index + 2}/32`, `fd00::${index + 2}/128`],
    revision: 7 + index,
  }));
  await daemon.addPeers(peers);
  const sent = standIn.requests.at(-1);
  assert.equal(sent?.path, '/w/add_peers');
  assert.equal(sent?.authorization, 'Bearer node-secret');
  const parsed = parseAddPeersForm(new URLSearchParams(sent?.body));
  assert.deepEqual(parsed, {
    ok: true,
    value: peers.map((peer) => ({ publicKey: peer.publicKey, allowedIps: peer.ipNet, revision: peer.revision })),
  });
});

test('a node URL with a path keeps its path, and no Authorization header is sent without a secret', async (t) => {
  const standIn = await startStandIn(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ peer_list: [] }));
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(1),
    url: `${standIn.url}/vpn-daemon/`,
    secret: () => null,
    timeoutMs: 3_000,
  });
  t.after(() => daemon.close());
  assert.deepEqual(await daemon.peerList(true), []);
  assert.equal(standIn.requests[0]?.path, '/vpn-daemon/w/peer_list?show_all=yes');
  assert.equal(standIn.requests[0]?.authorization, undefined);
});

test('a node that accepts the connection but never answers fails the call after the timeout, naming the node', async (t) => {
  const standIn = await startStandIn(t, () => {
    // Never answers: a node whose daemon hangs.
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(2),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 500,
  });
  t.after(() => daemon.close());
  const started = Date.now();
  await assert.rejects(daemon.nodeInfo(), (error: unknown) => {
    assert.ok(error instanceof NodeDaemonError);
    assert.match(error.message, new RegExp(`^node 2 \\(${standIn.url}\\) unreachable: `));
    return true;
  });
  const waited = Date.now() - started;
  assert.ok(waited >= 400 && waited < 3_000, `gave up after ${waited} ms`);
});

test('an error status and an answer that is not JSON are errors that say so', async (t) => {
  const standIn = await startStandIn(t, (request, response) => {
    if (request.url === '/w/add_peer') response.writeHead(400).end('{"error":"invalid public_key"}');
    else response.writeHead(200).end('not json');
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(3),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 3_000,
  });
  t.after(() => daemon.close());
  await assert.rejects(
    daemon.addPeer(generateWireGuardKeyPair().publicKey, ['10.0.0.2/32'], 1),
    /answered 400 \{"error":"invalid public_key"\}/,
  );
  await assert.rejects(daemon.nodeInfo(), /\/i\/node: answer is not JSON/);
});

test('a refused connection is an unreachable node; close() ends the kept connections', async (t) => {
  const standIn = await startStandIn(t, noContent);
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(4),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 3_000,
  });
  await daemon.disconnectClient('abc');
  const [socket] = standIn.sockets;
  assert.ok(socket !== undefined && !socket.destroyed, 'kept open after the call');
  const closed = once(socket, 'close');
  await daemon.close();
  await closed;

  const nowhere = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(5),
    url: 'http://127.0.0.1:2',
    secret: () => null,
    timeoutMs: 3_000,
  });
  t.after(() => nowhere.close());
  await assert.rejects(
    nowhere.disconnectClient('abc'),
    /^NodeDaemonError: node 5 \(http:\/\/127\.0\.0\.1:2\) unreachable: connect ECONNREFUSED 127\.0\.0\.1:2$/,
  );
});

test('a peer the node lists under a non-canonical or malformed key is read, but marked as never wanted', async (t) => {
  const canonical = generateWireGuardKeyPair().publicKey;
  const listed = [canonical, bit255Twin(canonical), ABOVE_FIELD_PRIME_KEY, 'not a key'];
  const standIn = await startStandIn(t, (_request, response) => {
    const peerList = listed.map((key) => ({ public_key: key, ip_net: ['10.0.0.2/32'], bytes_in: 0, bytes_out: 0 }));
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ peer_list: peerList }));
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(0),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 3_000,
  });
  t.after(() => daemon.close());
  const peers = await daemon.peerList(true);
  assert.deepEqual(
    peers.map((peer) => [peer.publicKey, peer.canonicalKey]),
    [
      [canonical, true],
      [bit255Twin(canonical), false],
      [ABOVE_FIELD_PRIME_KEY, false],
      ['not a key', false],
    ],
  );
});

test('an answer larger than the cap fails the call naming the limit, after reading about that much, not all of it', async (t) => {
  const node = await startEndlessBody(200 * 1024 * 1024);
  t.after(() => node.close());
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(4),
    url: node.url,
    secret: () => null,
    timeoutMs: 10_000,
    maxAnswerBytes: 4 * 1024 * 1024,
  });
  t.after(() => daemon.close());
  await assert.rejects(daemon.peerList(true), (error: unknown) => {
    assert.ok(error instanceof NodeDaemonError);
    assert.equal(error.answered, true);
    assert.match(
      error.message,
      /^node 4 \(http:\/\/127\.0\.0\.1:\d+\/w\/peer_list\?show_all=yes\) answered more than 4194304 bytes \(4 MiB, the limit\)/,
    );
    return true;
  });
  const sent = await node.closed();
  assert.ok(sent < 20 * 1024 * 1024, `the node wrote ${sent} bytes before the portal hung up`);
});

test('a node that answers 200 and then trickles its answer a byte at a time, without end, fails the call at its deadline as a node that does not answer', {
  timeout: 15_000,
}, async (t) => {
  const standIn = await startStandIn(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    // A byte every 200 ms: each one well within the 500 ms between chunks, the end never.
    const trickle = setInterval(() => response.write(' '), 200);
    response.on('close', () => clearInterval(trickle));
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(6),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 500,
  });
  t.after(() => daemon.close());
  // A call's deadline: twice the node timeout.
  const deadlineMs = 1_000;
  const started = Date.now();
  await assert.rejects(daemon.addPeer(generateWireGuardKeyPair().publicKey, ['10.0.0.2/32'], 1), (error: unknown) => {
    assert.ok(error instanceof NodeDaemonError);
    assert.equal(error.answered, false);
    assert.match(
      error.message,
      /^node 6 \(http:\/\/127\.0\.0\.1:\d+\) unreachable: no complete answer to \/w\/add_peer within 1000 ms$/,
    );
    return true;
  });
  const waited = Date.now() - started;
  assert.ok(waited >= deadlineMs - 100 && waited < deadlineMs + 2_000, `gave up after ${waited} ms`);
});

test('an /i/node answer far over its cap fails the call saying so, after reading about the cap, and the process carries on', async (t) => {
  const node = await startEndlessBody(200 * 1024 * 1024);
  t.after(() => node.close());
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(7),
    url: node.url,
    secret: () => null,
    timeoutMs: 10_000,
  });
  t.after(() => daemon.close());
  await assert.rejects(daemon.nodeInfo(), (error: unknown) => {
    assert.ok(error instanceof NodeDaemonError);
    assert.equal(error.answered, true);
    assert.match(
      error.message,
      /^node 7 \(http:\/\/127\.0\.0\.1:\d+\/i\/node\) answered more than 2097152 bytes \(2 MiB, the limit\); reading stopped$/,
    );
    return true;
  });
  const sent = await node.closed();
  assert.ok(sent < 8 * 1024 * 1024, `the node wrote ${sent} bytes before the portal hung up`);
});

test('a peer list with a negative or fractional counter, or an endpoint longer than an address and port, is an answer the protocol does not allow', async (t) => {
  const key = generateWireGuardKeyPair().publicKey;
  const valid = { public_key: key, ip_net: ['10.0.0.2/32'], bytes_in: 0, bytes_out: 0, endpoint: '[fd00::2]:51820' };
  const cases: Record<string, unknown>[] = [
    { ...valid, bytes_in: -1 },
    { ...valid, bytes_out: 1.5 },
    { ...valid, bytes_in: 2 ** 60 },
    { ...valid, endpoint: 'x'.repeat(65) },
  ];
  let listed: Record<string, unknown> = valid;
  const standIn = await startStandIn(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ peer_list: [valid, listed] }));
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(8),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 3_000,
  });
  t.after(() => daemon.close());
  assert.equal((await daemon.peerList(true)).length, 2);
  for (const entry of cases) {
    listed = entry;
    await assert.rejects(daemon.peerList(true), (error: unknown) => {
      assert.ok(error instanceof NodeDaemonError);
      assert.equal(error.answered, true);
      assert.match(error.message, /\/w\/peer_list: unexpected answer \(peer_list\.1\.(bytes_in|bytes_out|endpoint): /);
      return true;
    });
  }
});

test("a node whose clock is 10 minutes behind has its handshakes dated by the portal's clock, so they count as recent", async (t) => {
  const key = generateWireGuardKeyPair().publicKey;
  const behindMs = 10 * 60_000;
  // A node with its clock off cannot be made on one host: this stand-in answers as one would,
  // its Date header and its handshake written by a clock 10 minutes behind.
  const standIn = await startStandIn(t, (_request, response) => {
    const nodeNow = Date.now() - behindMs;
    const handshake = formatAtom(new Date(nodeNow - 30_000));
    const runStart = formatAtom(new Date(nodeNow - 300_000));
    const peerList = [
      {
        public_key: key,
        ip_net: ['10.0.0.2/32'],
        bytes_in: 0,
        bytes_out: 0,
        last_handshake_time: handshake,
        online_since: runStart,
      },
    ];
    response
      .writeHead(200, { 'content-type': 'application/json', date: new Date(nodeNow).toUTCString() })
      .end(JSON.stringify({ peer_list: peerList }));
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(0),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 3_000,
  });
  t.after(() => daemon.close());
  const [peer] = await daemon.peerList(true);
  const age = Date.now() - (peer?.lastHandshakeTime?.getTime() ?? 0);
  // 30 s old, give or take the whole seconds of the header and the handshake.
  assert.ok(age >= 28_000 && age <= 33_000, `the handshake is ${age} ms old by the portal's clock`);
  assert.ok(isOnline(peer?.lastHandshakeTime ?? null, new Date()), 'online: a session opens');
  const runAge = Date.now() - (peer?.onlineSince?.getTime() ?? 0);
  assert.ok(runAge >= 298_000 && runAge <= 303_000, `the run began ${runAge} ms ago by the portal's clock`);
});

test("a node whose clock is within a few seconds of the portal's has its handshakes taken as it wrote them", async (t) => {
  const key = generateWireGuardKeyPair().publicKey;
  const handshake = '2026-03-01T14:03:07+00:00';
  const standIn = await startStandIn(t, (_request, response) => {
    // A run said to begin after its latest handshake is no run the portal believes.
    const peerList = [
      {
        public_key: key,
        ip_net: ['10.0.0.2/32'],
        bytes_in: 0,
        bytes_out: 0,
        last_handshake_time: handshake,
        online_since: '2026-03-01T14:05:00+00:00',
      },
    ];
    response
      .writeHead(200, { 'content-type': 'application/json', date: new Date(Date.now() - 2_000).toUTCString() })
      .end(JSON.stringify({ peer_list: peerList }));
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(0),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 3_000,
  });
  t.after(() => daemon.close());
  const [peer] = await daemon.peerList(true);
  assert.equal(peer?.lastHandshakeTime?.toISOString(), '2026-03-01T14:03:07.000Z');
  assert.equal(peer?.onlineSince, null);
});

test("a node whose clock is 10 minutes behind has the moment it applied its NAT dated by the portal's clock", async (t) => {
  const behindMs = 10 * 60_000;
  const standIn = await startStandIn(t, (_request, response) => {
    const nodeNow = Date.now() - behindMs;
    const nat = { mode: 'masquerade', applied_at: new Date(nodeNow - 60_000).toISOString() };
    response
      .writeHead(200, { 'content-type': 'application/json', date: new Date(nodeNow).toUTCString() })
      .end(JSON.stringify({ nat }));
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(0),
    url: standIn.url,
    secret: () => null,
    timeoutMs: 3_000,
  });
  t.after(() => daemon.close());
  const { nat } = await daemon.nodeInfo();
  const age = Date.now() - Date.parse(nat?.applied_at ?? '');
  // A minute ago, give or take the whole seconds of the header: not eleven.
  assert.ok(age >= 58_000 && age <= 63_000, `applied ${age} ms ago by the portal's clock`);
});
