// The daily statistics the housekeeping writes: one row per profile and finished day, from this
// portal's live statistics and connection history. A day that has its row already keeps it: the
// eduVPN import brings eduVPN's figures of the days up to the move (its highest connection
// count, which this portal never sampled), and a housekeeping after the move reaches such a day.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asProfileId } from '../../../src/shared/ids.js';
import { insertDailyStatsIfMissing } from '../../../src/storage/statistics.js';
import { startTestPortal } from '../../support/test-portal.js';

test('a day the eduVPN import brought keeps its figures when the housekeeping reaches it, and a day without one gets this portal’s', async (t) => {
  let now = new Date('2026-03-10T10:00:00Z');
  const portal = await startTestPortal({ clock: { now: () => now } });
  t.after(portal.close);
  await portal.reconcile(); // the day's housekeeping: 03-09, which nobody used
  // The move, late on 03-10: eduVPN's figures of that day come in.
  await insertDailyStatsIfMissing(portal.portal.ctx.db, [
    { date: '2026-03-10', profileId: asProfileId('employees'), maxConnectionCount: 40, uniqueUserCount: 25 },
  ]);
  now = new Date('2026-03-11T00:10:00Z');
  await portal.reconcile(); // the next day's housekeeping reaches 03-10
  const stats = await portal.admin.stats({ profile_id: 'employees', since: '2026-03-09', until: '2026-03-10' });
  assert.deepEqual(stats, {
    employees: [
      { date: '2026-03-09', max_connection_count: 0, unique_user_count: 0 },
      { date: '2026-03-10', max_connection_count: 40, unique_user_count: 25 },
    ],
  });
});
