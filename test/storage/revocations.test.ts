// Receipts listed newest first; for a key limited to some profiles, the database picks the
// receipts it may see (every configuration taken away in its profiles, and at least one), so a
// key that may see a few of many receipts gets them in one statement per page rather than every
// receipt read and judged in the portal. Old receipts go with their node rows, or not at all.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber, asProfileId, asUserId, type ProfileId } from '../../src/shared/ids.js';
import type { Db } from '../../src/storage/database.js';
import { insertRevocationNodes } from '../../src/storage/revocation-nodes.js';
import { insertRevocation, listRevocations, pruneRevocations } from '../../src/storage/revocations.js';
import { refuseWrites } from '../support/refusing-trigger.js';
import { startTestPortal } from '../support/test-portal.js';

const AT = '2026-11-30T12:00:00+00:00';

/** A receipt whose configurations were in `profiles` (one configuration each), none for []. */
async function receipt(db: Db, revocationId: string, profiles: readonly string[]): Promise<void> {
  await insertRevocation(db, { revocationId, userId: asUserId('bob'), reason: 'disable_user', requestedAt: AT });
  await insertRevocationNodes(
    db,
    profiles.map((profileId, index) => ({
      revocationId,
      nodeNumber: asNodeNumber(0),
      connectionId: `key-${revocationId}-${index}`,
      vpnProto: 'wireguard' as const,
      profileId: asProfileId(profileId),
    })),
  );
}

test('a key limited to some profiles gets, newest first, only the receipts wholly within them', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  // Ids are time-ordered: r001 oldest, the newest 294 of guests alone.
  await receipt(db, 'r001', ['employees']);
  await receipt(db, 'r002', ['guests']);
  await receipt(db, 'r003', ['employees', 'guests']);
  await receipt(db, 'r004', []);
  await receipt(db, 'r005', ['employees', 'employees']);
  for (let index = 6; index < 300; index++) await receipt(db, `r${String(index).padStart(3, '0')}`, ['guests']);
  const ids = async (withinProfiles?: readonly ProfileId[], limit = 10) =>
    (await listRevocations(db, { ...(withinProfiles === undefined ? {} : { withinProfiles }), limit })).map(
      (revocation) => revocation.revocationId,
    );

  assert.deepEqual(
    await ids([asProfileId('employees')]),
    ['r005', 'r001'],
    'past 294 newer receipts of guests, in one page',
  );
  const both = await ids([asProfileId('employees'), asProfileId('guests')], 300);
  assert.deepEqual(
    both.slice(-4),
    ['r005', 'r003', 'r002', 'r001'],
    'r004 took nothing away: no key limited to profiles sees it',
  );
  assert.deepEqual(await ids([]), [], 'no profile: nothing');
  assert.equal((await ids(undefined, 1000)).length, 299, 'every receipt, r004 too, for a key without limits');
});

test('a housekeeping batch of old receipts that fails half-way deletes neither the receipts nor their node rows', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  await receipt(db, 'r001', ['employees', 'guests']);
  await db.updateTable('revocations').set({ state: 'applied', applied_at: AT }).execute();
  // The receipts' own statement fails (as one past its time limit would), after the node rows' went.
  const allow = await refuseWrites(db, 'refuse_receipt_delete', 'DELETE', 'revocations', 'receipts stay today');
  await assert.rejects(pruneRevocations(db, '2027-01-01T00:00:00+00:00'), /receipts stay today/);
  const nodeRows = async () => (await db.selectFrom('revocation_nodes').select('connection_id').execute()).length;
  assert.equal(await nodeRows(), 2, 'the receipt keeps what it waited for');

  await allow();
  assert.deepEqual(await pruneRevocations(db, '2027-01-01T00:00:00+00:00'), { removed: 1, held: 0 });
  assert.equal(await nodeRows(), 0);
});
