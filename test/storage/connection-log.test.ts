// The housekeeping's prunes of the history on both databases, over more rows than one batch
// (src/storage/batches.ts): what went and what a hold kept are counted exactly across batches,
// a held user's rows stay, and a stop between two batches leaves the rest for the next run.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BATCH_ROWS } from '../../src/storage/batches.js';
import { blankOriginatingAddresses, pruneConnectionLog } from '../../src/storage/connection-log.js';
import type { Db } from '../../src/storage/database.js';
import { ManualClock } from '../support/admin-keys.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

/**
 * A portal whose clock says 11 January: its own housekeeping finds nothing of these sessions
 * past a retention, so only the calls of the test prune them.
 */
function portalOfJanuary(): Promise<TestPortal> {
  return startTestPortal({ clock: new ManualClock('2026-01-11T00:00:00Z') });
}

/** `count` closed sessions ending on 10 January, every fifth one `held`'s, the others `other`'s. */
async function sessions(db: Db, count: number): Promise<void> {
  const rows = Array.from({ length: count }, (_, i) => ({
    log_id: `log-${String(i).padStart(6, '0')}`,
    user_id: i % 5 === 0 ? 'held' : 'other',
    profile_id: 'employees',
    vpn_proto: 'openvpn',
    connection_id: `c${i}`,
    node_number: 0,
    ip_four: '10.44.0.9',
    ip_six: 'fd44::9',
    originating_ip: '192.0.2.1',
    connected_at: '2026-01-10T09:00:00+00:00',
    disconnected_at: '2026-01-10T10:00:00+00:00',
    bytes_in: 1,
    bytes_out: 2,
  }));
  for (let first = 0; first < rows.length; first += 500)
    await db
      .insertInto('connection_log')
      .values(rows.slice(first, first + 500))
      .execute();
}

async function left(db: Db): Promise<{ readonly sessions: number; readonly addressed: number }> {
  const row = await db
    .selectFrom('connection_log')
    .select((eb) => [eb.fn.countAll<number | string>().as('sessions'), eb.fn.count('originating_ip').as('addressed')])
    .executeTakeFirstOrThrow();
  return { sessions: Number(row.sessions), addressed: Number(row.addressed) };
}

test('the history is pruned and its addresses blanked in batches, each counted exactly, a held user’s rows kept', async (t) => {
  const portal = await portalOfJanuary();
  t.after(portal.close);
  const db = portal.portal.ctx.db;
  const count = 2 * BATCH_ROWS + 500;
  await sessions(db, count);
  const held = count / 5;

  assert.deepEqual(await blankOriginatingAddresses(db, '2026-02-01T00:00:00+00:00', ['held']), {
    removed: count - held,
    held,
  });
  assert.deepEqual(await left(db), { sessions: count, addressed: held });
  assert.deepEqual(await pruneConnectionLog(db, '2026-02-01T00:00:00+00:00', ['held']), {
    removed: count - held,
    held,
  });
  assert.deepEqual(await left(db), { sessions: held, addressed: held });
});

test('a prune stopped between two batches says what went, and the next one does the rest', async (t) => {
  const portal = await portalOfJanuary();
  t.after(portal.close);
  const db = portal.portal.ctx.db;
  const count = 3 * BATCH_ROWS;
  await sessions(db, count);

  const first = await pruneConnectionLog(db, '2026-02-01T00:00:00+00:00', [], () => true);
  assert.deepEqual(first, { removed: BATCH_ROWS, held: 0 }, 'one batch, then the stop');
  assert.deepEqual(await left(db), { sessions: count - BATCH_ROWS, addressed: count - BATCH_ROWS });
  assert.deepEqual(await pruneConnectionLog(db, '2026-02-01T00:00:00+00:00'), {
    removed: count - BATCH_ROWS,
    held: 0,
  });
  assert.deepEqual(await left(db), { sessions: 0, addressed: 0 });
});
