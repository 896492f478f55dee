// Groups under a size limit: in order, as few as the limit allows, an item never split.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sizeLimitedGroups } from '../../src/shared/size-limited-groups.js';

const length = (text: string): number => text.length;

test('items go into as few groups as the limit allows, in their order', () => {
  assert.deepEqual(sizeLimitedGroups(['aa', 'bb', 'c', 'ddd', 'e'], length, 5), [
    ['aa', 'bb', 'c'],
    ['ddd', 'e'],
  ]);
  assert.deepEqual(sizeLimitedGroups(['aa', 'bbb'], length, 5), [['aa', 'bbb']], 'a group may fill the limit exactly');
});

test('an item larger than the limit is a group of its own, and no items make no groups', () => {
  assert.deepEqual(sizeLimitedGroups(['a', 'toolong', 'b'], length, 3), [['a'], ['toolong'], ['b']]);
  assert.deepEqual(sizeLimitedGroups([], length, 3), []);
});
