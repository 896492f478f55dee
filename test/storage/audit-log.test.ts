// The housekeeping's prune of the audit log: the entries about a user under a legal hold stay,
// and how many it kept is counted a page of that user's entries at a time, exactly.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BATCH_ROWS } from '../../src/storage/batches.js';
import { auditRecords, insertAuditRecord, newAuditId, pruneAuditLog } from '../../src/storage/audit-log.js';
import { ManualClock } from '../support/admin-keys.js';
import { startTestPortal } from '../support/test-portal.js';

test('entries about a held user, more than a page of them, stay and are counted exactly; newer ones are not counted', async (t) => {
  const portal = await startTestPortal({ clock: new ManualClock('2026-01-11T00:00:00Z') });
  t.after(portal.close);
  const db = portal.portal.ctx.db;
  const entry = (at: string, userId: string | null) => {
    const record = {
      auditId: newAuditId(new Date(at)),
      at,
      keyName: 'mdm',
      sourceAddress: '192.0.2.1',
      call: 'create',
      parameters: {},
      status: 200,
      userId,
      connectionIds: [],
      detail: null,
    };
    return insertAuditRecord(db, record);
  };
  const old = 2 * BATCH_ROWS + 500;
  for (let i = 0; i < old; i++) await entry('2026-01-10T09:00:00+00:00', 'held');
  for (let i = 0; i < 40; i++) await entry('2026-02-05T09:00:00+00:00', 'held');
  for (let i = 0; i < 60; i++) await entry('2026-01-10T09:00:00+00:00', i % 2 === 0 ? 'other' : null);

  assert.deepEqual(await pruneAuditLog(db, '2026-02-01T00:00:00+00:00', ['held']), { removed: 60, held: old });
  const kept = await auditRecords(db, { userId: 'held', limit: 10_000 });
  assert.equal(kept.length, old + 40, 'every entry about the held user stays');
});
