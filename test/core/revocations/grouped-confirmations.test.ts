// Confirmations of concurrent calls are written together: the first at once, those that come
// while a group is written in one group right after it, each call answered when its own group
// is written, or with its group's failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { GroupedConfirmations, type ConfirmationWrite } from '../../../src/core/revocations/index.js';
import { asNodeNumber, asRevocationId } from '../../../src/shared/ids.js';

/** A write the test finishes (or fails) group by group, and what each group held: "receipts: removals" per call. */
function heldWrites() {
  const groups: string[][] = [];
  const finishers: ((error?: Error) => void)[] = [];
  const write: ConfirmationWrite = (confirmations) => {
    groups.push(
      confirmations.map(
        ({ revocationIds, confirmed }) =>
          `${revocationIds.join('+')}: ${confirmed.map((removal) => removal.connectionId).join('+')}`,
      ),
    );
    return new Promise((resolve, reject) => finishers.push((error) => (error ? reject(error) : resolve())));
  };
  const finish = (error?: Error): void => {
    const next = finishers.shift();
    if (next === undefined) throw new Error('no group is being written');
    next(error);
  };
  return { write, groups, finish };
}

const removal = (key: string) => [{ nodeNumber: asNodeNumber(0), connectionId: key }];

test('the first confirmation is written at once, those that come meanwhile together right after it', async () => {
  const confirmations = new GroupedConfirmations();
  const { write, groups, finish } = heldWrites();
  const answered: string[] = [];
  const first = confirmations.confirm([asRevocationId('r1')], removal('k1'), write).then(() => answered.push('r1'));
  await nextTurn();
  assert.deepEqual(groups, [['r1: k1']]);

  const later = ['r2', 'r3', 'r4'].map((id, index) =>
    confirmations.confirm([asRevocationId(id)], removal(`k${index + 2}`), write).then(() => answered.push(id)),
  );
  await nextTurn();
  assert.equal(groups.length, 1, 'nothing more is written while the first group is');
  finish();
  await first;
  await nextTurn();
  assert.deepEqual(groups[1], ['r2: k2', 'r3: k3', 'r4: k4'], 'each call keeps its own removals');
  assert.deepEqual(answered, ['r1'], 'the later calls wait for their own group');
  finish();
  await Promise.all(later);
  assert.deepEqual(answered, ['r1', 'r2', 'r3', 'r4']);
});

test('a group that fails fails each of its calls, and the next group is written all the same', async () => {
  const confirmations = new GroupedConfirmations();
  const { write, groups, finish } = heldWrites();
  const first = confirmations.confirm([asRevocationId('r1')], removal('k1'), write);
  await nextTurn();
  const failing = [
    confirmations.confirm([asRevocationId('r2')], removal('k2'), write),
    confirmations.confirm([asRevocationId('r3')], removal('k3'), write),
  ];
  finish();
  await first;
  await nextTurn();
  finish(new Error('the database is gone'));
  for (const call of failing) await assert.rejects(call, /the database is gone/);
  const after = confirmations.confirm([asRevocationId('r4')], removal('k4'), write);
  await nextTurn();
  assert.deepEqual(groups.at(-1), ['r4: k4']);
  finish();
  await after;
});
