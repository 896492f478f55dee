// Lists by key, appended to in place.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listIn } from '../../src/shared/list-in.js';

test('rows appended under their key land in one list per key, in their order, the list kept in the map', () => {
  const byNode = new Map<number, string[]>();
  for (const [node, key] of [
    [1, 'a'],
    [2, 'b'],
    [1, 'c'],
  ] as const)
    listIn(byNode, node).push(key);
  assert.deepEqual(
    [...byNode],
    [
      [1, ['a', 'c']],
      [2, ['b']],
    ],
  );
  const first = listIn(byNode, 1);
  first.push('d');
  assert.equal(byNode.get(1), first, 'the same list, not a copy');
  assert.deepEqual(byNode.get(1), ['a', 'c', 'd']);
});
