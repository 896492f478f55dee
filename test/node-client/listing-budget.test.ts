// The heap budget every node listing takes its weight from: the reconcile passes' places and the
// Admin API's listings of the nodes together stay within it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ListingBudget, listingBudgetBytes } from '../../src/node-client/listing-budget.js';
import { NodeSlots } from '../../src/core/reconcile/node-slots.js';
import { asNodeNumber } from '../../src/shared/ids.js';

/** Work that runs until the test ends it, noting when it started. */
function heldWork(started: string[], name: string) {
  let finish = (): void => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    work: async () => {
      started.push(name);
      await done;
    },
    finish,
  };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

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
