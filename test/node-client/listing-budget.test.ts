// The heap budget every node listing takes its weight from: the reconcile passes' places and the
// Admin API's listings of the nodes together stay within it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ListingBudget, listingBudgetBytes } from '../../src/node-client/listing-budget.js';
import { NodeSlots } from '../../src/core/reconcile/node-slots.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { heldWork, settle } from '../support/held-work.js';

test('at the 192 MB cap the budget holds one full wireguard-go node’s listing, not two', () => {
  const budget = listingBudgetBytes(251.7 * 1024 * 1024);
  const fullNode = 15_100_000;
  assert.ok(budget >= 20 * 1024 * 1024 && budget < 2 * fullNode, `${budget}`);
});

test('listings wait in order until their weight fits, and one is always let in, whatever its weight', async () => {
  const budget = new ListingBudget(10);
  const started: string[] = [];
  const heavy = heldWork(started, 'heavy');
  const light = heldWork(started, 'light');
  const other = heldWork(started, 'other');
  const runs = [budget.run(25, heavy.work), budget.run(4, light.work), budget.run(4, other.work)];
  await settle();
  assert.deepEqual(started, ['heavy'], 'alone it enters over the limit; the rest wait');
  assert.equal(budget.held, 25);
  heavy.finish();
  await settle();
  assert.deepEqual(started, ['heavy', 'light', 'other'], 'then both fit together');
  light.finish();
  other.finish();
  await Promise.all(runs);
  assert.equal(budget.held, 0);
});

test('a reconcile pass waits while the Admin API’s listings hold the shared budget, and the other way round', async () => {
  const budget = new ListingBudget(10);
  const slots = new NodeSlots(4, budget);
  const started: string[] = [];
  const listing = heldWork(started, 'listing');
  const listingRun = budget.run(8, listing.work);
  const pass = heldWork(started, 'pass');
  const passRun = slots.run(asNodeNumber(1), 'full pass', pass.work, 8);
  await settle();
  assert.deepEqual(started, ['listing'], 'the pass waits for the listing’s weight');

  listing.finish();
  await listingRun;
  await settle();
  assert.deepEqual(started, ['listing', 'pass'], 'given back, the pass enters');

  const second = heldWork(started, 'second listing');
  const secondRun = budget.run(8, second.work);
  await settle();
  assert.deepEqual(started, ['listing', 'pass'], 'now the listing waits for the pass');
  assert.equal(slots.weight, 8);
  pass.finish();
  await passRun;
  await settle();
  assert.deepEqual(started, ['listing', 'pass', 'second listing']);
  second.finish();
  await secondRun;
});

test('a waiting listing keeps its turn: passes that would fit beside the work under way do not pass it', async () => {
  const budget = new ListingBudget(10);
  const slots = new NodeSlots(4, budget);
  const started: string[] = [];
  const first = heldWork(started, 'pass 1');
  const firstRun = slots.run(asNodeNumber(1), 'full pass', first.work, 6);
  await settle();
  const listing = heldWork(started, 'listing');
  const listingRun = budget.run(6, listing.work);
  const light = heldWork(started, 'pass 2');
  const lightRun = slots.run(asNodeNumber(2), 'full pass', light.work, 2);
  await settle();
  assert.deepEqual(started, ['pass 1'], 'the light pass would fit, but the listing asked first');
  first.finish();
  await firstRun;
  await settle();
  assert.deepEqual(started, ['pass 1', 'listing', 'pass 2']);
  listing.finish();
  light.finish();
  await Promise.all([listingRun, lightRun]);
});

test('a pass for one node goes before listings that keep coming, and a full pass’s node takes its turn among them', async () => {
  const budget = new ListingBudget(20);
  const slots = new NodeSlots(4, budget);
  const started: string[] = [];
  // Two pollers whose listings overlap: one always waits while the other runs.
  const first = heldWork(started, 'listing 1');
  const firstRun = budget.run(15, first.work);
  const second = heldWork(started, 'listing 2');
  const secondRun = budget.run(15, second.work);
  const nodePass = heldWork(started, 'node pass');
  const nodePassRun = slots.run(asNodeNumber(1), 'node pass', nodePass.work, 10);
  const fullPass = heldWork(started, 'full pass');
  const fullPassRun = slots.run(asNodeNumber(2), 'full pass', fullPass.work, 10);
  const third = heldWork(started, 'listing 3');
  const thirdRun = budget.run(15, third.work);
  await settle();
  assert.deepEqual(started, ['listing 1']);

  first.finish();
  await firstRun;
  await settle();
  assert.deepEqual(started, ['listing 1', 'node pass'], 'the node pass before the listing that asked before it');
  nodePass.finish();
  await nodePassRun;
  await settle();
  assert.deepEqual(started, ['listing 1', 'node pass', 'listing 2'], 'the full pass asked after listing 2');
  second.finish();
  await secondRun;
  await settle();
  assert.deepEqual(
    started,
    ['listing 1', 'node pass', 'listing 2', 'full pass'],
    'the full pass asked before listing 3: its turn comes first',
  );
  fullPass.finish();
  await fullPassRun;
  await settle();
  assert.deepEqual(started, ['listing 1', 'node pass', 'listing 2', 'full pass', 'listing 3']);
  third.finish();
  await thirdRun;
  assert.equal(budget.held, 0);
});
