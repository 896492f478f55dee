// The count of tunnels per client that decides, at a full relay whose tunnels WireGuard all
// answered, whose tunnel gives its place to a new client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClientShares } from '../../../src/agent/proxyguard/client-shares.js';

test('the oldest tunnel of the client holding the most is named, only when it holds two more than the newcomer', () => {
  const shares = new ClientShares<string>();
  for (const tunnel of ['a1', 'a2', 'a3']) shares.add('A', tunnel);
  shares.add('B', 'b1');
  assert.equal(shares.oldestOfLargestAbove('C'), 'a1', 'A holds 3, the newcomer none');
  assert.equal(shares.oldestOfLargestAbove('B'), 'a1', 'A holds 3, B one');
  assert.equal(shares.oldestOfLargestAbove('A'), undefined, 'A holds the most itself');

  shares.delete('A', 'a1');
  assert.equal(shares.oldestOfLargestAbove('B'), undefined, 'A holds 2, B one: taking one would only swap them');
  assert.equal(shares.oldestOfLargestAbove('C'), 'a2');
  assert.equal(shares.countOf('A'), 2);
});

test('the largest count follows tunnels that end, down to nobody', () => {
  const shares = new ClientShares<string>();
  shares.add('A', 'a1');
  shares.add('A', 'a2');
  shares.add('B', 'b1');
  shares.add('B', 'b2');
  shares.add('B', 'b2');
  assert.equal(shares.countOf('B'), 2, 'a tunnel added twice counts once');
  shares.delete('A', 'a2');
  shares.delete('A', 'a-unknown');
  assert.equal(shares.oldestOfLargestAbove('C'), 'b1', 'B now holds the most');
  shares.delete('B', 'b1');
  assert.equal(shares.oldestOfLargestAbove('C'), undefined, 'one each: nobody holds two more than a newcomer');
  shares.delete('A', 'a1');
  shares.delete('B', 'b2');
  assert.equal(shares.countOf('A'), 0);
  assert.equal(shares.oldestOfLargestAbove('C'), undefined);
  shares.add('C', 'c1');
  shares.add('C', 'c2');
  assert.equal(shares.oldestOfLargestAbove('D'), 'c1', 'counting starts afresh');
});
