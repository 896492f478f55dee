// The agent's view of its interface's peers: reads are shared and never run side by side, and
// between reads the view follows the changes the agent writes; after a failed write, only a read
// begun after it becomes the view again. The interface is a stand-in here (reads the test lets
// finish one by one); the real interface is in peers.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { WgDump, WgPeer } from '../../../src/agent/wireguard/dump.js';
import { PeerView } from '../../../src/agent/wireguard/peer-view.js';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';

function newPeerKey(): WireGuardKey {
  return generateWireGuardKeyPair().publicKey;
}

function peer(publicKey: WireGuardKey, bytesReceived = 0): WgPeer {
  return {
    publicKey,
    allowedIps: ['198.19.0.2/32'],
    endpoint: null,
    latestHandshake: null,
    bytesReceived,
    bytesSent: 0,
  };
}

/** A view over a stand-in interface whose reads the test finishes, on a clock the test moves. */
function heldView() {
  let nowMs = 0;
  let onInterface: WgPeer[] = [];
  const reads: (() => void)[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const view = new PeerView({
    interfaceName: 'wg0',
    nowMs: () => nowMs,
    wg: {
      dump: () => {
        running++;
        mostAtOnce = Math.max(mostAtOnce, running);
        const snapshot = [...onInterface];
        return new Promise<WgDump>((resolve) =>
          reads.push(() => {
            running--;
            resolve({ interface: { privateKey: null, publicKey: null, listenPort: 0 }, peers: snapshot });
          }),
        );
      },
    },
  });
  const finishRead = async (tookMs: number): Promise<void> => {
    const finish = reads.shift();
    if (finish === undefined) throw new Error('no read is under way');
    nowMs += tookMs;
    finish();
    await nextTurn();
  };
  return {
    view,
    reads,
    finishRead,
    mostAtOnce: () => mostAtOnce,
    setPeers: (peers: WgPeer[]) => {
      onInterface = peers;
    },
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

test('whoever asks while a read runs shares the next read, which starts after it; reads never run side by side', async () => {
  const { view, reads, finishRead, mostAtOnce, setPeers } = heldView();
  const alice = newPeerKey();
  const first = view.read();
  setPeers([peer(alice)]);
  const second = [view.read(), view.read(), view.read()];
  await nextTurn();
  assert.equal(reads.length, 1, 'the later callers wait for the running read');
  await finishRead(10);
  assert.deepEqual((await first).peers, [], 'the first read started before alice was added');
  assert.equal(reads.length, 1, 'one more read, for the three callers together');
  await finishRead(10);
  for (const dump of await Promise.all(second)) assert.deepEqual(dump.peers, [peer(alice)]);
  assert.equal(mostAtOnce(), 1);
});

test('a change written while a read runs is laid over that read, which may not show it', async () => {
  const { view, finishRead } = heldView();
  const alice = newPeerKey();
  const reading = view.read();
  view.applied([{ kind: 'set', publicKey: alice, allowedIps: ['198.19.0.2/32'] }]);
  await finishRead(10);
  await reading;
  assert.equal(view.count, 1);
  assert.deepEqual([...(await view.recent()).keys()], [alice]);
});

test('a removal is answered from a read younger than ten times its duration, with the changes since; an older one is read again', async () => {
  const { view, reads, finishRead, setPeers, advance } = heldView();
  const [alice, bob] = [newPeerKey(), newPeerKey()];
  setPeers([peer(alice, 100)]);
  const first = view.recent();
  await finishRead(50);
  assert.equal((await first).get(alice)?.bytesReceived, 100);

  view.applied([
    { kind: 'set', publicKey: bob, allowedIps: ['198.19.0.3/32'] },
    { kind: 'remove', publicKey: alice },
  ]);
  advance(400);
  const reused = await view.recent();
  assert.equal(reads.length, 0, 'no read: the last one is 450 ms old and took 50 ms');
  assert.deepEqual([...reused.keys()], [bob]);

  setPeers([peer(bob, 7)]);
  advance(100);
  const fresh = view.recent();
  await nextTurn();
  assert.equal(reads.length, 1, 'read again at 550 ms');
  await finishRead(50);
  assert.equal((await fresh).get(bob)?.bytesReceived, 7);
});

test('a read that took long (thousands of peers) is reused for up to 40 s, longer than the agent waits between its own looks', async () => {
  const { view, reads, finishRead, advance } = heldView();
  const first = view.recent();
  await finishRead(800);
  await first;
  advance(39_000);
  await view.recent();
  assert.equal(reads.length, 0, 'reused at 39.8 s');
  advance(1_000);
  const again = view.recent();
  await nextTurn();
  assert.equal(reads.length, 1, 'read again at 40.8 s');
  await finishRead(800);
  await again;
});

test('after a failed write the view is read again before it answers anything', async () => {
  const { view, reads, finishRead } = heldView();
  const first = view.recent();
  await finishRead(1_000);
  await first;
  view.forget();
  assert.equal(view.count, null);
  const again = view.recent();
  await nextTurn();
  assert.equal(reads.length, 1);
  await finishRead(10);
  await again;
  assert.equal(view.count, 0);
});

test("a read that began before a failed write is not kept: a removal's answer waits for a read begun after the write", async () => {
  const { view, reads, finishRead, setPeers } = heldView();
  const [alice, bob] = [newPeerKey(), newPeerKey()];
  setPeers([peer(alice)]);
  const answer = view.recent();
  // A write adds bob while that read runs: wireguard-go applies it, but its answer comes too late.
  setPeers([peer(alice), peer(bob)]);
  view.forget();
  await finishRead(800);
  assert.equal(view.count, null, 'the read that began before the failed write is not the view');
  assert.equal(reads.length, 1, 'the interface is read again');
  await finishRead(10);
  assert.deepEqual(new Set((await answer).keys()), new Set([alice, bob]));
  assert.equal(view.count, 2);
});
