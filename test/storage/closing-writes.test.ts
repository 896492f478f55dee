// A change's closing writes run in storage's fixed order, whatever order they were asked for in:
// the receipt and the audit row, then the listing counter (whose lock must be a change's last),
// then the marker; and each of them is written, one by one or as part of a create's last statement.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inClosingOrder, runClosingWrites, type ClosingWrite } from '../../src/storage/closing-writes.js';
import { readListingGeneration } from '../../src/storage/listing-generation.js';
import { asNodeNumber, asProfileId, asUserId } from '../../src/shared/ids.js';
import { startTestPortal } from '../support/test-portal.js';

const AT = '2026-11-25T12:00:00+00:00';

const receipt: ClosingWrite = {
  kind: 'revocation-receipt',
  revocation: { revocationId: 'receipt-1', userId: asUserId('alice'), reason: 'delete_connection', requestedAt: AT },
  nodes: [
    {
      revocationId: 'receipt-1',
      nodeNumber: asNodeNumber(0),
      connectionId: 'key-1',
      vpnProto: 'wireguard',
      profileId: asProfileId('employees'),
    },
  ],
};
const auditRecord = (auditId: string): ClosingWrite => ({
  kind: 'audit-record',
  record: {
    auditId,
    at: AT,
    keyName: 'ops',
    sourceAddress: '192.0.2.1',
    call: 'delete_connection',
    parameters: {},
    status: 204,
    userId: 'alice',
    connectionIds: ['key-1'],
    detail: null,
  },
});
const listing: ClosingWrite = { kind: 'listing-generation' };
const marker: ClosingWrite = { kind: 'change-marker', markerId: 'marker-1' };

test('closing writes are put in closing order whatever order they were asked for in, those of one kind as asked', () => {
  const [first, second] = [auditRecord('a1'), auditRecord('a2')];
  assert.deepEqual(inClosingOrder([marker, listing, first, receipt, second]), [
    receipt,
    first,
    second,
    listing,
    marker,
  ]);
});

test('several moves of the listing counter become one move by their sum, so one statement never upserts a shard row twice', () => {
  assert.deepEqual(inClosingOrder([listing, marker, listing, { kind: 'listing-generation', by: 3 }]), [
    { kind: 'listing-generation', by: 5 },
    marker,
  ]);
  assert.deepEqual(inClosingOrder([marker, listing]), [listing, marker], 'one move stays as it was asked');
});

test('running the closing writes one by one writes each of them in the transaction', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const before = Number(await readListingGeneration(db));
  await db.transaction().execute((trx) => runClosingWrites(trx, [marker, listing, auditRecord('a1'), receipt]));
  assert.equal(Number(await readListingGeneration(db)), before + 1);
  const revocations = await db.selectFrom('revocations').select(['revocation_id', 'reason']).execute();
  assert.deepEqual(revocations, [{ revocation_id: 'receipt-1', reason: 'delete_connection' }]);
  const nodes = await db.selectFrom('revocation_nodes').select(['revocation_id', 'connection_id']).execute();
  assert.deepEqual(nodes, [{ revocation_id: 'receipt-1', connection_id: 'key-1' }]);
  const audit = await db.selectFrom('audit_log').select(['audit_id', 'call']).execute();
  assert.deepEqual(audit, [{ audit_id: 'a1', call: 'delete_connection' }]);
  const markers = await db.selectFrom('change_markers').select('marker_id').execute();
  assert.deepEqual(markers, [{ marker_id: 'marker-1' }]);
});
