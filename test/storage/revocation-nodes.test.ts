// What a node confirmed gone is marked on the receipts it was confirmed for, and on no other:
// another call's receipt may wait for the same configuration on the same node (it came back
// and was revoked again), and the first call's confirmation says nothing about that.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber, asProfileId, asUserId } from '../../src/shared/ids.js';
import { confirmRevocationNodes, insertRevocationNodes } from '../../src/storage/revocation-nodes.js';
import { insertRevocation } from '../../src/storage/revocations.js';
import type { Db } from '../../src/storage/database.js';
import { startTestPortal } from '../support/test-portal.js';

const AT = '2026-11-30T12:00:00+00:00';
const node = asNodeNumber(1);

/** A receipt of bob's waiting for `keys` on node 1. */
async function receiptFor(db: Db, revocationId: string, keys: readonly string[]): Promise<void> {
  await insertRevocation(db, { revocationId, userId: asUserId('bob'), reason: 'disable_user', requestedAt: AT });
  await insertRevocationNodes(
    db,
    keys.map((connectionId) => ({
      revocationId,
      nodeNumber: node,
      connectionId,
      vpnProto: 'wireguard',
      profileId: asProfileId('employees'),
    })),
  );
}

async function pending(db: Db): Promise<string[]> {
  const rows = await db
    .selectFrom('revocation_nodes')
    .select(['revocation_id', 'connection_id'])
    .where('applied_at', 'is', null)
    .orderBy('revocation_id')
    .orderBy('connection_id')
    .execute();
  return rows.map((row) => `${row.revocation_id} ${row.connection_id}`);
}

test('confirmations of two calls written together mark each its own receipts, not the other call’s', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  // The first disable took key-x and key-y off node 1; key-x came back (an enable), and the
  // second disable's push to node 1 failed: it waits for key-x, and confirmed key-z only.
  await receiptFor(db, 'first', ['key-x', 'key-y']);
  await receiptFor(db, 'second', ['key-x', 'key-z']);
  const marked = await confirmRevocationNodes(
    db,
    [
      {
        revocationIds: ['first'],
        confirmed: [
          { nodeNumber: node, connectionId: 'key-x' },
          { nodeNumber: node, connectionId: 'key-y' },
        ],
      },
      { revocationIds: ['second'], confirmed: [{ nodeNumber: node, connectionId: 'key-z' }] },
    ],
    AT,
  );
  assert.equal(marked, 3);
  assert.deepEqual(await pending(db), ['second key-x']);
});

test('one confirmation for many receipts (a reconcile pass) marks every receipt waiting for what is gone, in parts when long', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const keys = Array.from({ length: 1_200 }, (_, index) => `key-${String(index).padStart(4, '0')}`);
  await receiptFor(db, 'first', keys);
  await receiptFor(db, 'second', [...keys.slice(0, 10), 'still-there']);
  const marked = await confirmRevocationNodes(
    db,
    [
      {
        revocationIds: ['first', 'second'],
        confirmed: keys.map((connectionId) => ({ nodeNumber: node, connectionId })),
      },
    ],
    AT,
  );
  assert.equal(marked, 1_210);
  assert.deepEqual(await pending(db), ['second still-there']);
});
