// When the peer batcher writes: a burst is gathered until a quiet moment, and what arrives while
// a slow batch is being written goes together right after that write; and what a failed write
// leaves for the next removal. The interface is a stand-in here (a write the test holds open or
// fails, a read it holds); the real writes are in peers.test.ts and peer-writer.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { PeerBatcher } from '../../../src/agent/wireguard/batcher.js';
import type { WgDump } from '../../../src/agent/wireguard/dump.js';
import { PeerView } from '../../../src/agent/wireguard/peer-view.js';
import type { PeerChange } from '../../../src/agent/wireguard/wg-tool.js';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';

function newPeerKey(): WireGuardKey {
  return generateWireGuardKeyPair().publicKey;
}

/** A batcher whose writes the test lets finish one by one. */
function heldBatcher(options: { quietMs: number; maxWaitMs: number; maxRequests?: number }) {
  const writes: PeerChange[][] = [];
  const finishers: (() => void)[] = [];
  const batcher = new PeerBatcher({
    interfaceName: 'wg0',
    logger: pino({ level: 'silent' }),
    ...options,
    peers: { recent: async () => new Map(), applied: () => {}, forget: () => {} },
    writer: {
      apply: (_interfaceName, changes) => {
        writes.push([...changes]);
        return new Promise((resolve) => finishers.push(() => resolve({ method: 'uapi', writes: 1 })));
      },
    },
  });
  const finishWrite = (): void => {
    const finish = finishers.shift();
    if (finish === undefined) throw new Error('no write is under way');
    finish();
  };
  return { batcher, writes, finishWrite };
}

test('requests that arrive during a slow write are written together right after it, without waiting for a quiet moment', async () => {
  const { batcher, writes, finishWrite } = heldBatcher({ quietMs: 20, maxWaitMs: 20 });
  const [alice, bob, carol] = [newPeerKey(), newPeerKey(), newPeerKey()];
  const first = batcher.add(alice, ['198.19.0.2/32']);
  while (writes.length === 0) await sleep(5);

  const during = [batcher.add(bob, ['198.19.0.3/32']), batcher.add(carol, ['198.19.0.4/32'])];
  await nextTurn();
  assert.equal(writes.length, 1, 'nothing more is written while the first write runs');
  // The write takes longer than a quiet moment: the interface is the slow step.
  await sleep(40);
  finishWrite();
  await first;
  await nextTurn();
  assert.deepEqual(writes, [
    [{ kind: 'set', publicKey: alice, allowedIps: ['198.19.0.2/32'] }],
    [
      { kind: 'set', publicKey: bob, allowedIps: ['198.19.0.3/32'] },
      { kind: 'set', publicKey: carol, allowedIps: ['198.19.0.4/32'] },
    ],
  ]);
  finishWrite();
  await Promise.all(during);
});

test('after a quick write, what arrived during it is gathered until a quiet moment, as any burst', async () => {
  const { batcher, writes, finishWrite } = heldBatcher({ quietMs: 50, maxWaitMs: 1_000 });
  const first = batcher.add(newPeerKey(), ['198.19.0.5/32']);
  while (writes.length === 0) await sleep(5);
  const during = batcher.add(newPeerKey(), ['198.19.0.6/32']);
  finishWrite();
  await first;
  await nextTurn();
  assert.equal(writes.length, 1, 'the second request waits for its quiet moment');
  const later = batcher.add(newPeerKey(), ['198.19.0.7/32']);
  while (writes.length === 1) await sleep(5);
  assert.equal(writes[1]?.length, 2, 'and shares its write with the request that came after it');
  finishWrite();
  await Promise.all([during, later]);
});

test('a burst is gathered until it is quiet, and no longer than the bound after its first request', async () => {
  const { batcher, writes, finishWrite } = heldBatcher({ quietMs: 30, maxWaitMs: 200 });
  const keys = Array.from({ length: 6 }, newPeerKey);
  const added: Promise<void>[] = [];
  // Six requests 10 ms apart: each comes before the quiet moment, so all six share one write.
  for (const [index, key] of keys.entries()) {
    added.push(batcher.add(key, [`198.19.1.${index}/32`]));
    await sleep(10);
  }
  while (writes.length === 0) await sleep(5);
  assert.equal(writes[0]?.length, 6);
  finishWrite();
  await Promise.all(added);

  // A steady stream never falls quiet: the bound ends the batch.
  const {
    batcher: bounded,
    writes: boundedWrites,
    finishWrite: finishBounded,
  } = heldBatcher({ quietMs: 30, maxWaitMs: 50 });
  const streamed: Promise<void>[] = [];
  const started = performance.now();
  while (boundedWrites.length === 0) {
    if (performance.now() - started > 5_000) assert.fail('the bound never ended the batch');
    streamed.push(bounded.add(newPeerKey(), ['198.19.2.1/32']));
    await sleep(5);
  }
  assert.ok(streamed.length > 1 && streamed.length < 100, `one write for the first ${streamed.length} requests`);
  finishBounded();
  await Promise.all(streamed);
});

test('a batch is written at once when as many requests wait as a batch may take', async () => {
  const { batcher, writes, finishWrite } = heldBatcher({ quietMs: 60_000, maxWaitMs: 60_000, maxRequests: 4 });
  const keys = Array.from({ length: 5 }, newPeerKey);
  const added = keys.slice(0, 4).map((key, index) => batcher.add(key, [`198.19.3.${index}/32`]));
  await nextTurn();
  assert.deepEqual(
    writes.map((write) => write.length),
    [4],
    'the fourth request starts the write',
  );
  const fifth = batcher.add(keys[4] as WireGuardKey, ['198.19.3.4/32']);
  await nextTurn();
  assert.equal(writes.length, 1, 'the fifth waits for the write under way');
  finishWrite();
  await Promise.all(added);
  const drained = batcher.drain();
  await nextTurn();
  finishWrite();
  await drained;
  await fifth;
  assert.deepEqual(
    writes.map((write) => write.length),
    [4, 1],
  );
});

test('the batcher counts as busy while a request waits or a batch is written, and from then on since the batch was settled', async () => {
  const { batcher, writes, finishWrite } = heldBatcher({ quietMs: 5, maxWaitMs: 5 });
  assert.equal(batcher.busyAtMs, Number.NEGATIVE_INFINITY, 'never busy before the first request');
  const adding = batcher.add(newPeerKey(), ['198.19.0.2/32']);
  const waiting = performance.now();
  assert.ok(batcher.busyAtMs >= waiting, 'busy while the request waits');
  while (writes.length === 0) await sleep(2);
  const writing = performance.now();
  assert.ok(batcher.busyAtMs >= writing, 'busy while the batch is written');
  finishWrite();
  await adding;
  await nextTurn();
  const settled = batcher.busyAtMs;
  assert.ok(settled >= writing && settled <= performance.now(), 'the moment the batch was settled');
  await sleep(10);
  assert.equal(batcher.busyAtMs, settled, 'idle: the moment stays where it was');
});

test('a read that began before a failed write does not stand in for the interface: a removal after it is written', async () => {
  let nowMs = 0;
  const onInterface = new Set<WireGuardKey>();
  const heldReads: (() => void)[] = [];
  let holdReads = true;
  const view = new PeerView({
    interfaceName: 'wg0',
    nowMs: () => nowMs,
    wg: {
      // wireguard-go builds a listing when the read begins.
      dump: () => {
        const dump: WgDump = {
          interface: { privateKey: null, publicKey: null, listenPort: 0 },
          peers: [...onInterface].map((publicKey) => ({
            publicKey,
            allowedIps: ['198.19.0.2/32'],
            endpoint: null,
            latestHandshake: null,
            bytesReceived: 0,
            bytesSent: 0,
          })),
        };
        if (!holdReads) return Promise.resolve(dump);
        return new Promise<WgDump>((resolve) => heldReads.push(() => resolve(dump)));
      },
    },
  });
  const writes: PeerChange[][] = [];
  let answerNextWrite = true;
  const batcher = new PeerBatcher({
    interfaceName: 'wg0',
    logger: pino({ level: 'silent' }),
    peers: view,
    writer: {
      apply: async (_interfaceName, changes) => {
        writes.push([...changes]);
        for (const change of changes) {
          if (change.kind === 'set') onInterface.add(change.publicKey);
          else onInterface.delete(change.publicKey);
        }
        if (!answerNextWrite) {
          answerNextWrite = true;
          throw new Error('wireguard-go did not answer within 10 s');
        }
        return { method: 'uapi', writes: 1 };
      },
    },
  });
  const revoked = newPeerKey();

  // The agent's own look at its peers' endpoints begins: a full interface, a slow read.
  const look = view.read();
  // An add reaches wireguard-go, which applies it, but its answer does not come in time.
  answerNextWrite = false;
  await assert.rejects(batcher.add(revoked, ['198.19.0.2/32']), /did not answer/);
  // The look ends; it began before the add and does not show it (a view reused for up to 40 s).
  assert.equal(heldReads.length, 1);
  holdReads = false;
  nowMs += 800;
  heldReads.shift()?.();
  assert.deepEqual((await look).peers, [], 'the look still gets its answer');

  // A second later the user is disabled.
  nowMs += 1_000;
  const removed = await batcher.remove(revoked);
  assert.equal(removed?.publicKey, revoked, 'the removal is answered from a read begun after the failed add');
  assert.deepEqual(writes.at(-1), [{ kind: 'remove', publicKey: revoked }]);
  assert.equal(onInterface.has(revoked), false);
});
