// The outbox workers' loop: it goes on at once while rounds do something, sleeps otherwise until
// woken (the poll interval here is an hour, so only a wake can start the next round), survives a
// round that throws, and stop() waits for what the rounds left in flight.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WakeableLoop } from '../../src/shared/wakeable-loop.js';
import { until } from '../support/until.js';

const AN_HOUR = 3_600_000;

test('rounds follow each other while they do something; an idle loop runs again only when woken', async () => {
  let rounds = 0;
  let work = 3;
  const loop = new WakeableLoop({
    round: async () => {
      rounds++;
      if (work === 0) return false;
      work--;
      return true;
    },
    failed: (error) => assert.fail(String(error)),
    inFlight: () => [],
    pollMs: AN_HOUR,
  });
  loop.start();
  await until('three busy rounds and an idle one', async () => rounds === 4, 5_000);
  work = 1;
  loop.wake();
  await until('a woken round and the idle one after it', async () => rounds === 6, 5_000);
  await loop.stop();
  assert.equal(rounds, 6, 'nothing ran on its own while the loop slept');
});

test('a round that throws is reported and the loop goes on; stop waits for the work in flight', async () => {
  const failures: unknown[] = [];
  let rounds = 0;
  let finishWork: () => void = () => {};
  const inFlight: Promise<void>[] = [];
  const loop = new WakeableLoop({
    round: async () => {
      rounds++;
      if (rounds === 1) throw new Error('the database is away');
      if (rounds === 2) inFlight.push(new Promise((resolve) => (finishWork = resolve)));
      return false;
    },
    failed: (error) => failures.push(error),
    inFlight: () => inFlight,
    pollMs: AN_HOUR,
  });
  loop.start();
  await until('the failed round is reported', async () => failures.length === 1, 5_000);
  loop.wake();
  await until('the next round ran', async () => rounds === 2, 5_000);
  let stopped = false;
  const stopping = loop.stop().then(() => {
    stopped = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(stopped, false, 'stop waits for the work in flight');
  finishWork();
  await stopping;
  assert.equal(stopped, true);
  assert.match(String(failures[0]), /the database is away/);
});
