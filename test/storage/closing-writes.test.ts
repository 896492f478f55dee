// A change's closing writes run in storage's fixed order, whatever order they were asked for in:
// the receipt and the audit row, then the listing counter (whose lock must be a change's last),
// then the marker; and each of them is written: on PostgreSQL in one statement (a receipt, or a
// drop of kept answers, too large for it on its own first), on SQLite one by one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inClosingOrder, runClosingWrites, type ClosingWrite } from '../../src/storage/closing-writes.js';
import { readListingGeneration } from '../../src/storage/listing-generation.js';
import { asNodeNumber, asProfileId, asUserId } from '../../src/shared/ids.js';
import { isPostgres } from '../../src/storage/database.js';
import { statementsSentBy } from '../support/pg-statements.js';
import { startTestPortal } from '../support/test-portal.js';

const AT = '2026-11-25T12:00:00+00:00';

const receiptNode = {
  revocationId: 'receipt-1',
  nodeNumber: asNodeNumber(0),
  connectionId: 'key-1',
  vpnProto: 'wireguard',
  profileId: asProfileId('employees'),
} as const;
const receipt: ClosingWrite = {
  kind: 'revocation-receipt',
  revocation: { revocationId: 'receipt-1', userId: asUserId('alice'), reason: 'delete_connection', requestedAt: AT },
  nodes: [receiptNode],
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

test('the closing writes are written in the change’s transaction, on PostgreSQL in one statement', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const before = Number(await readListingGeneration(db));
  const { statements } = await statementsSentBy(() =>
    db.transaction().execute((trx) => runClosingWrites(trx, [marker, listing, auditRecord('a1'), receipt])),
  );
  if (isPostgres(db)) assert.equal(statements.filter(isNotBeginOrCommit).length, 1, statements.join('\n'));
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

test('a receipt of more configurations than one statement takes is written on its own first, whole', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const many = Array.from({ length: 250 }, (_, index) => ({ ...receiptNode, connectionId: `key-${index}` }));
  const large: ClosingWrite = { ...receipt, kind: 'revocation-receipt', nodes: many };
  const { statements } = await statementsSentBy(() =>
    db.transaction().execute((trx) => runClosingWrites(trx, [marker, large, auditRecord('a1')])),
  );
  // The receipt's row and its rows (one INSERT), then the rest as one statement.
  if (isPostgres(db)) assert.equal(statements.filter(isNotBeginOrCommit).length, 3, statements.join('\n'));
  const nodes = await db.selectFrom('revocation_nodes').select('connection_id').execute();
  assert.equal(nodes.length, 250);
  assert.equal((await db.selectFrom('change_markers').select('marker_id').execute()).length, 1);
  assert.equal((await db.selectFrom('audit_log').select('audit_id').execute()).length, 1);
});

test('kept answers of revoked configurations are dropped with the other closing writes, also more than one statement names', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  const record = (index: number) => ({
    key_lineage: 'secret',
    idempotency_key: `key-${index}`,
    call: 'create',
    fingerprint: 'f'.repeat(64),
    owner: 'o'.repeat(24),
    state: 'done',
    status: 200,
    answer: 'sealed',
    created_at: AT,
    // Far ahead: the portal's housekeeping would prune it meanwhile otherwise.
    expires_at: '2099-01-01T00:00:00+00:00',
    handed_out_kind: 'configuration',
    handed_out_id: `configuration-${index}`,
  });
  const rows = Array.from({ length: 1_210 }, (_, index) => record(index));
  for (let start = 0; start < rows.length; start += 100)
    await db
      .insertInto('idempotency_records')
      .values(rows.slice(start, start + 100))
      .execute();
  const revoked = (count: number): ClosingWrite => ({
    kind: 'kept-answers-dropped',
    ended: {
      kind: 'configuration',
      end: 'revoked',
      ids: Array.from({ length: count }, (_, index) => `configuration-${index}`),
    },
  });
  const states = async () =>
    Object.entries(
      (await db.selectFrom('idempotency_records').select(['state', 'answer']).execute()).reduce<Record<string, number>>(
        (counts, row) => {
          const name = `${row.state}${row.answer === null ? '' : ' with answer'}`;
          counts[name] = (counts[name] ?? 0) + 1;
          return counts;
        },
        {},
      ),
    ).sort();

  const few = await statementsSentBy(() =>
    db.transaction().execute((trx) => runClosingWrites(trx, [marker, revoked(3)])),
  );
  if (isPostgres(db)) assert.equal(few.statements.filter(isNotBeginOrCommit).length, 1, few.statements.join('\n'));
  assert.deepEqual(await states(), [
    ['done with answer', 1_207],
    ['revoked', 3],
  ]);
  // 1,200 names: three statements of their own (500, 500, 200), then the marker.
  await db.transaction().execute((trx) => runClosingWrites(trx, [revoked(1_200), { ...marker, markerId: 'marker-2' }]));
  assert.deepEqual(await states(), [
    ['done with answer', 10],
    ['revoked', 1_200],
  ]);
});

function isNotBeginOrCommit(statement: string): boolean {
  return !/^(begin|commit)$/i.test(statement.trim());
}
