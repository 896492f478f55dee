// The places for reconcile work on single nodes: a few at once, one per node, and a pass for one
// node before the full pass's next node, so a node that came back waits for one place, not for
// the whole pass.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NodeSlots } from '../../../src/core/reconcile/node-slots.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { heldWork, settle } from '../../support/held-work.js';

test('no more nodes at once than the places, and a node pass takes the next free place before the full pass’s next node', async () => {
  const slots = new NodeSlots(2);
  const started: string[] = [];
  const full = [0, 1, 2, 3].map((node) => ({ node, ...heldWork(started, `full ${node}`) }));
  const runs = full.map(({ node, work }) => slots.run(asNodeNumber(node), 'full pass', work));
  await settle();
  assert.deepEqual(started, ['full 0', 'full 1'], 'two places, taken in order');

  const nodePass = heldWork(started, 'node 5');
  const nodeRun = slots.run(asNodeNumber(5), 'node pass', nodePass.work);
  await settle();
  assert.equal(slots.busy, 2, 'it waits for a place like the rest');

  full[0]?.finish();
  await settle();
  assert.deepEqual(started, ['full 0', 'full 1', 'node 5'], 'the freed place goes to the node pass');
  full[1]?.finish();
  await settle();
  assert.deepEqual(started.slice(3), ['full 2'], 'then the full pass goes on');
  nodePass.finish();
  full[2]?.finish();
  full[3]?.finish();
  await Promise.all([...runs, nodeRun]);
  assert.deepEqual(started.slice(4), ['full 3']);
  assert.equal(slots.busy, 0);
});

test('a node pass for a node the full pass is working on waits for that work, and others pass it meanwhile', async () => {
  const slots = new NodeSlots(4);
  const started: string[] = [];
  const onNode = heldWork(started, 'full 0');
  const fullRun = slots.run(asNodeNumber(0), 'full pass', onNode.work);
  await settle();
  const sameNode = heldWork(started, 'node 0');
  const sameRun = slots.run(asNodeNumber(0), 'node pass', sameNode.work);
  const otherNode = heldWork(started, 'node 1');
  const otherRun = slots.run(asNodeNumber(1), 'node pass', otherNode.work);
  await settle();
  assert.deepEqual(started, ['full 0', 'node 1'], 'one pass per node at a time; another node does not wait');
  onNode.finish();
  await settle();
  assert.deepEqual(started, ['full 0', 'node 1', 'node 0'], 'the node’s own pass runs once the node is free');
  sameNode.finish();
  otherNode.finish();
  await Promise.all([fullRun, sameRun, otherRun]);
});

test('work that fails gives its place back', async () => {
  const slots = new NodeSlots(1);
  await assert.rejects(
    slots.run(asNodeNumber(0), 'node pass', async () => {
      throw new Error('node 0 failed');
    }),
    /node 0 failed/,
  );
  assert.equal(await slots.run(asNodeNumber(0), 'full pass', async () => 'next'), 'next');
  assert.equal(slots.busy, 0);
});

test('nodes whose listings together exceed the budget wait for weight to be given back, and one is always let in, whatever its weight', async () => {
  const slots = new NodeSlots(4, 100);
  const started: string[] = [];
  const heavy = heldWork(started, 'full 0 (150)');
  const heavyRun = slots.run(asNodeNumber(0), 'full pass', heavy.work, 150);
  const light = [1, 2].map((node) => ({ node, ...heldWork(started, `full ${node} (40)`) }));
  const lightRuns = light.map(({ node, work }) => slots.run(asNodeNumber(node), 'full pass', work, 40));
  await settle();
  assert.deepEqual(started, ['full 0 (150)'], 'over the budget alone, it runs alone');
  assert.equal(slots.weight, 150);
  heavy.finish();
  await heavyRun;
  await settle();
  assert.deepEqual(started.slice(1), ['full 1 (40)', 'full 2 (40)'], 'two fit beside each other');
  assert.equal(slots.weight, 80);
  for (const { finish } of light) finish();
  await Promise.all(lightRuns);
  assert.equal(slots.weight, 0);
  assert.equal(slots.busy, 0);
});

test('a heavy node pass keeps its turn: the full pass’s lighter nodes do not pass it while it waits for weight', async () => {
  const slots = new NodeSlots(4, 100);
  const started: string[] = [];
  const first = heldWork(started, 'full 0 (60)');
  const firstRun = slots.run(asNodeNumber(0), 'full pass', first.work, 60);
  await settle();
  const nodePass = heldWork(started, 'node 5 (60)');
  const nodeRun = slots.run(asNodeNumber(5), 'node pass', nodePass.work, 60);
  const next = heldWork(started, 'full 1 (10)');
  const nextRun = slots.run(asNodeNumber(1), 'full pass', next.work, 10);
  await settle();
  assert.deepEqual(started, ['full 0 (60)'], 'the light node behind the waiting node pass waits too');
  first.finish();
  await firstRun;
  await settle();
  assert.deepEqual(started.slice(1), ['node 5 (60)', 'full 1 (10)']);
  nodePass.finish();
  next.finish();
  await Promise.all([nodeRun, nextRun]);
});
