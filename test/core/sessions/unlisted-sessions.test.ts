// A session is lost only when listings a while apart miss it: one listing that shows it again
// starts the count afresh, and each node is counted on its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UnlistedSessions } from '../../../src/core/sessions/index.js';
import { asNodeNumber } from '../../../src/shared/ids.js';

const GRACE_MS = 30_000;
const at = (seconds: number) => new Date(Date.UTC(2026, 11, 2, 12, 0, seconds));

test('a session missed by listings 30 s apart is due, dated at the first miss; one listed again in between starts afresh; another node does not count', () => {
  const unlisted = new UnlistedSessions();
  const node0 = asNodeNumber(0);
  const node1 = asNodeNumber(1);

  assert.deepEqual(unlisted.missedFor(node0, ['ana', 'ben'], at(0), GRACE_MS), new Map());
  // ben is listed again: forgotten. ana is still missed, but not for long enough.
  assert.deepEqual(unlisted.missedFor(node0, ['ana'], at(10), GRACE_MS), new Map());
  // Node 1's listing misses ana and ben too: node 0's count is its own.
  assert.deepEqual(unlisted.missedFor(node1, ['ana', 'ben'], at(31), GRACE_MS), new Map());
  assert.deepEqual(unlisted.missedFor(node0, ['ana', 'ben'], at(30), GRACE_MS), new Map([['ana', at(0)]]));
  assert.deepEqual(
    unlisted.missedFor(node0, ['ben'], at(59), GRACE_MS),
    new Map(),
    'ben was first missed again at 30 s',
  );
  assert.deepEqual(unlisted.missedFor(node0, ['ben'], at(60), GRACE_MS), new Map([['ben', at(30)]]));
});

test('after the clock was set back, a miss counts from the listing, not from a first miss still to come', () => {
  const unlisted = new UnlistedSessions();
  const node0 = asNodeNumber(0);
  assert.deepEqual(unlisted.missedFor(node0, ['ana'], at(50), GRACE_MS), new Map());
  // The clock is set back 40 s: ana's count starts again at 10 s.
  assert.deepEqual(unlisted.missedFor(node0, ['ana'], at(10), GRACE_MS), new Map());
  assert.deepEqual(unlisted.missedFor(node0, ['ana'], at(40), GRACE_MS), new Map([['ana', at(10)]]));
});
