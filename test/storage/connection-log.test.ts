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

/** A session of the test's history: whose, when it began and ended, from which address. */
interface Session {
  readonly user: string;
  readonly started: string;
  readonly ended: string | null;
  readonly address: string | null;
}

/** Writes `sessions`, the n-th with id `logId(n)` (by default in the order of writing). */
async function insertSessions(
  db: Db,
  sessions: readonly Session[],
  logId = (n: number) => `log-${String(n).padStart(6, '0')}`,
): Promise<void> {
  const rows = sessions.map((session, i) => ({
    log_id: logId(i),
    user_id: session.user,
    profile_id: 'employees',
    vpn_proto: 'openvpn',
    connection_id: `c${i}`,
    node_number: 0,
    ip_four: '10.44.0.9',
    ip_six: 'fd44::9',
    originating_ip: session.address,
    connected_at: session.started,
    disconnected_at: session.ended,
    bytes_in: 1,
    bytes_out: 2,
  }));
  for (let first = 0; first < rows.length; first += 500)
    await db
      .insertInto('connection_log')
      .values(rows.slice(first, first + 500))
      .execute();
}

/** `count` closed sessions ending on 10 January, every fifth one `held`'s, the others `other`'s. */
function sessions(db: Db, count: number): Promise<void> {
  return insertSessions(
    db,
    Array.from({ length: count }, (_, i) => ({
      user: i % 5 === 0 ? 'held' : 'other',
      started: '2026-01-10T09:00:00+00:00',
      ended: '2026-01-10T10:00:00+00:00',
      address: '192.0.2.1',
    })),
  );
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

test('a held user’s history longer than a page is counted exactly, sessions of one moment, open and newer ones included', async (t) => {
  const portal = await portalOfJanuary();
  t.after(portal.close);
  const db = portal.portal.ctx.db;
  // `held`: 2,500 sessions that all began at one moment, so pages meet within a tie of starts;
  // of each ten, one is still open, one ended after the cut, one has no client address left.
  // `also-held`: 1,200 sessions one second apart. `other`: 300, under no hold.
  const history: Session[] = [
    ...Array.from({ length: 2_500 }, (_, i) => ({
      user: 'held',
      started: '2026-01-10T09:00:00+00:00',
      ended: i % 10 === 0 ? null : i % 10 === 1 ? '2026-02-05T10:00:00+00:00' : '2026-01-10T10:00:00+00:00',
      address: i % 10 === 2 ? null : '192.0.2.1',
    })),
    ...Array.from({ length: 1_200 }, (_, i) => ({
      user: 'also-held',
      started: `2026-01-10T09:${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}+00:00`,
      ended: '2026-01-10T10:00:00+00:00',
      address: '192.0.2.2',
    })),
    ...Array.from({ length: 300 }, () => ({
      user: 'other',
      started: '2026-01-10T09:00:00+00:00',
      ended: '2026-01-10T10:00:00+00:00',
      address: '192.0.2.3',
    })),
  ];
  // Ids not in the order of writing.
  await insertSessions(db, history, (n) => `log-${String((n * 7919) % 4_000).padStart(6, '0')}`);
  const cut = '2026-02-01T00:00:00+00:00';

  // A user named twice (as no caller does, but nothing forbids it) is counted once.
  assert.deepEqual(await blankOriginatingAddresses(db, cut, ['held', 'also-held', 'held']), {
    removed: 300,
    held: 1_750 + 1_200,
  });
  assert.deepEqual(await pruneConnectionLog(db, cut, ['held', 'also-held']), { removed: 300, held: 2_000 + 1_200 });
  assert.deepEqual(await left(db), { sessions: 3_700, addressed: 2_250 + 1_200 });
});
