// The parts of the node agent that need no interface: reading `wg show dump`, planning a batch
// of peer changes, and the daemon HTTP protocol in front of a peer set the test controls.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { asWireGuardKey, type WireGuardKey } from '../../../src/shared/ids.js';
import { buildDaemonServer, type WireGuardPeers } from '../../../src/agent/daemon-api/server.js';
import { planPeerBatch } from '../../../src/agent/wireguard/batch-plan.js';
import { PeerBatcher } from '../../../src/agent/wireguard/batcher.js';
import { Secret } from '../../../src/shared/secret.js';
import { parseServerConfig, ServerConfigFormatError } from '../../../src/agent/node-assignment.js';
import { parseWgDump, type ListedPeer, type WgPeer } from '../../../src/agent/wireguard/dump.js';
import type { PeerChange } from '../../../src/agent/wireguard/wg-tool.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { bit255Twin } from '../../support/device-keys.js';

const NODE_KEY = 'a'.repeat(64);
const alice = generateWireGuardKeyPair().publicKey;
const bob = generateWireGuardKeyPair().publicKey;

describe('reading wg show dump', () => {
  test('the interface line and each peer line become typed values', () => {
    const serverPrivate = generateWireGuardKeyPair().privateKey;
    const dump = [
      `${serverPrivate}\t${alice}\t51820\toff`,
      `${alice}\t(none)\t198.18.0.2:40000\t198.19.0.2/32,fd00::2/128\t1795860000\t1200\t3400\toff`,
      `${bob}\t(none)\t(none)\t(none)\t0\t0\t0\t25`,
      '',
    ].join('\n');

    const parsed = parseWgDump(dump);

    assert.equal(parsed.interface.listenPort, 51820);
    assert.equal(parsed.interface.privateKey?.reveal(), serverPrivate);
    assert.equal(String(parsed.interface.privateKey), '[redacted]', 'the private key does not print');
    assert.deepEqual(parsed.peers, [
      {
        publicKey: alice,
        allowedIps: ['198.19.0.2/32', 'fd00::2/128'],
        endpoint: '198.18.0.2:40000',
        latestHandshake: new Date(1795860000 * 1000),
        bytesReceived: 1200,
        bytesSent: 3400,
      },
      { publicKey: bob, allowedIps: [], endpoint: null, latestHandshake: null, bytesReceived: 0, bytesSent: 0 },
    ]);
  });

  test('output that is not a dump is refused', () => {
    assert.throws(() => parseWgDump(''), /no interface line/);
    assert.throws(
      () => parseWgDump(`(none)\t(none)\t0\toff\nnot-a-key\t(none)\t(none)\t(none)\t0\t0\t0\toff`),
      /line 2: invalid peer public key/,
    );
  });
});

describe('planning a batch of peer changes', () => {
  const peer = (publicKey: WireGuardKey, allowedIps: string[]): WgPeer => ({
    publicKey,
    allowedIps,
    endpoint: '198.18.0.9:51820',
    latestHandshake: new Date('2026-11-22T10:00:00Z'),
    bytesReceived: 10,
    bytesSent: 20,
  });

  test('the last request per peer wins, and each request gets its own answer', () => {
    const current = new Map([[alice, peer(alice, ['198.19.0.2/32'])]]);
    const plan = planPeerBatch(
      [
        { kind: 'remove', publicKey: alice },
        { kind: 'add', publicKey: bob, allowedIps: ['198.19.0.3/32'] },
        { kind: 'add', publicKey: alice, allowedIps: ['198.19.0.4/32'] },
        { kind: 'remove', publicKey: bob },
      ],
      current,
    );

    assert.deepEqual(plan.changes, [{ kind: 'set', publicKey: alice, allowedIps: ['198.19.0.4/32'] }]);
    assert.deepEqual(plan.results, [
      { kind: 'removed', peer: peer(alice, ['198.19.0.2/32']) },
      { kind: 'added' },
      { kind: 'added' },
      // Bob existed only within the batch: he is reported as he would have been, never applied.
      {
        kind: 'removed',
        peer: {
          publicKey: bob,
          allowedIps: ['198.19.0.3/32'],
          endpoint: null,
          latestHandshake: null,
          bytesReceived: 0,
          bytesSent: 0,
        },
      },
    ]);
  });

  test('removing a peer that is not there changes nothing', () => {
    const plan = planPeerBatch([{ kind: 'remove', publicKey: bob }], new Map());
    assert.deepEqual(plan.changes, []);
    assert.deepEqual(plan.results, [{ kind: 'removed', peer: null }]);
  });
});

describe('the peer batcher', () => {
  test('requests that arrive together become one change set, and drain applies what is pending at once', async () => {
    const applied: (readonly PeerChange[])[] = [];
    const batcher = new PeerBatcher({
      interfaceName: 'wg0',
      logger: pino({ level: 'silent' }),
      // Long quiet time: only drain() can explain an immediate application.
      quietMs: 60_000,
      maxWaitMs: 60_000,
      peers: { recent: async () => new Map(), applied: () => {}, forget: () => {} },
      writer: {
        apply: async (_interfaceName, changes) => {
          applied.push(changes);
          return { method: 'uapi', writes: 1 };
        },
      },
    });
    const carol = generateWireGuardKeyPair().publicKey;
    const answers = Promise.all([
      batcher.add(alice, ['198.19.0.2/32']),
      batcher.add(bob, ['198.19.0.3/32']),
      batcher.remove(carol),
    ]);
    await batcher.drain();
    assert.deepEqual(await answers, [undefined, undefined, null]);
    assert.deepEqual(applied, [
      [
        { kind: 'set', publicKey: alice, allowedIps: ['198.19.0.2/32'] },
        { kind: 'set', publicKey: bob, allowedIps: ['198.19.0.3/32'] },
      ],
    ]);
  });
});

describe('the server configuration from the portal', () => {
  const privateKey = generateWireGuardKeyPair().privateKey;

  test('unknown keys such as "openvpn" are ignored and the private key stays hidden', () => {
    const config = parseServerConfig({
      wireguard: { privateKey, listenPort: 51820, mtu: null, addressList: ['198.19.0.1/24', 'FD00:0::1/64'] },
      openvpn: { anything: 1 },
    });
    assert.equal(config.wireguard?.privateKey.reveal(), privateKey);
    assert.deepEqual(
      config.wireguard?.addressList.map((address) => address.text),
      ['198.19.0.1/24', 'fd00::1/64'],
    );
    assert.equal(JSON.stringify(config).includes(privateKey), false);
  });

  test('"wireguard": null means no WireGuard profile on this node', () => {
    assert.deepEqual(parseServerConfig({ wireguard: null }), { wireguard: null });
  });

  test('a broken answer is refused without repeating the key', () => {
    const broken = { wireguard: { privateKey, listenPort: 70000, mtu: null, addressList: ['198.19.0.1'] } };
    assert.throws(
      () => parseServerConfig(broken),
      (error: unknown) => {
        assert.ok(error instanceof ServerConfigFormatError, `a format error, not ${String(error)}`);
        assert.match(error.message, /wireguard\.listenPort/);
        assert.match(error.message, /wireguard\.addressList\.0/);
        assert.equal(error.message.includes(privateKey), false);
        return true;
      },
    );
  });
});

describe('the daemon protocol in front of a known set of peers', () => {
  const now = new Date('2026-11-22T10:00:00Z');
  const secondsAgo = (seconds: number): Date => new Date(now.getTime() - seconds * 1000);
  const handshakes: [string, Date | null][] = [
    ['179 s ago', secondsAgo(179)],
    ['180 s ago', secondsAgo(180)],
    ['never', null],
  ];
  const peers: ListedPeer[] = handshakes.map(([, latestHandshake], index) => ({
    publicKey: asWireGuardKey(generateWireGuardKeyPair().publicKey),
    allowedIps: [`198.19.0.${index + 2}/32`],
    endpoint: null,
    latestHandshake,
    // The first peer's run of handshakes began ten minutes ago.
    onlineSince: index === 0 ? secondsAgo(600) : latestHandshake,
    bytesReceived: 100 + index,
    bytesSent: 200 + index,
  }));
  const added: [WireGuardKey, readonly string[]][] = [];
  const fixedPeers: WireGuardPeers = {
    list: async () => peers,
    add: async (publicKey, allowedIps) => {
      added.push([publicKey, allowedIps]);
    },
    remove: async (publicKey) => peers.find((candidate) => candidate.publicKey === publicKey) ?? null,
  };
  const app = buildDaemonServer({
    nodeKey: new Secret(NODE_KEY),
    peers: fixedPeers,
    clock: { now: () => now },
    logger: pino({ level: 'silent' }),
    nodeInfo: async () => {
      throw new Error('not used');
    },
  });
  const auth = { authorization: `Bearer ${NODE_KEY}` };

  test('show_all=no lists a peer whose handshake is 179 s old, not one 180 s old or without any', async () => {
    const online = await app.inject({ method: 'GET', url: '/w/peer_list?show_all=no', headers: auth });
    assert.equal(online.statusCode, 200);
    assert.deepEqual(online.json(), {
      peer_list: [
        {
          public_key: peers[0]?.publicKey,
          ip_net: ['198.19.0.2/32'],
          last_handshake_time: '2026-11-22T09:57:01+00:00',
          bytes_in: 100,
          bytes_out: 200,
          online_since: '2026-11-22T09:50:00+00:00',
        },
      ],
    });

    const all = await app.inject({ method: 'GET', url: '/w/peer_list?show_all=yes', headers: auth });
    const listed = (all.json() as { peer_list: Record<string, unknown>[] }).peer_list;
    assert.equal(listed.length, 3);
    assert.equal(listed[1]?.['last_handshake_time'], '2026-11-22T09:57:00+00:00');
    assert.equal('last_handshake_time' in (listed[2] ?? {}), false);
    assert.equal('online_since' in (listed[2] ?? {}), false);
  });

  test('the bearer scheme is case-insensitive but the key must match exactly', async () => {
    const lowerCase = await app.inject({
      method: 'GET',
      url: '/w/peer_list?show_all=yes',
      headers: { authorization: `bearer ${NODE_KEY}` },
    });
    assert.equal(lowerCase.statusCode, 200);
    const upperKey = await app.inject({
      method: 'GET',
      url: '/w/peer_list?show_all=yes',
      headers: { authorization: `Bearer ${NODE_KEY.toUpperCase()}` },
    });
    assert.equal(upperKey.statusCode, 401);
    assert.equal(upperKey.headers['www-authenticate'], 'Bearer');
  });

  test('add_peer hands over the key and the networks in canonical form', async () => {
    const answer = await app.inject({
      method: 'POST',
      url: '/w/add_peer',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `public_key=${encodeURIComponent(alice)}&ip_net=198.19.0.9%2F32&ip_net=FD00%3A0%3A0%3A0%3A0%3A0%3A0%3A9%2F128`,
    });
    assert.equal(answer.statusCode, 204);
    assert.deepEqual(added.at(-1), [alice, ['198.19.0.9/32', 'fd00::9/128']]);
  });

  test('add_peer refuses a non-canonical key (the bit-255 twin of another); remove_peer takes it, so such a peer can be taken off', async () => {
    const twin = bit255Twin(alice);
    const form = { ...auth, 'content-type': 'application/x-www-form-urlencoded' };
    const count = added.length;
    const add = await app.inject({
      method: 'POST',
      url: '/w/add_peer',
      headers: form,
      payload: `public_key=${encodeURIComponent(twin)}&ip_net=198.19.0.10%2F32`,
    });
    assert.equal(add.statusCode, 400);
    assert.match((add.json() as { error: string }).error, /public_key.*canonical/);
    assert.equal(added.length, count, 'nothing handed over');
    const remove = await app.inject({
      method: 'POST',
      url: '/w/remove_peer',
      headers: form,
      payload: `public_key=${encodeURIComponent(twin)}`,
    });
    assert.equal(remove.statusCode, 204, remove.body);
  });

  test('unknown calls answer 404 in JSON', async () => {
    const answer = await app.inject({ method: 'GET', url: '/o/connection_list', headers: auth });
    assert.equal(answer.statusCode, 404);
    assert.match((answer.json() as { error: string }).error, /no such call/);
  });
});
