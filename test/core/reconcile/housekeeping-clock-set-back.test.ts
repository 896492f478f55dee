// The daily housekeeping after the portal's clock was set back (it ran ahead, then NTP or an
// administrator put it right): the day it last ran is then ahead of the clock, and must not keep
// the retention from running until the clock reaches that day again.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { ManualClock } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';

const DAY = 86_400_000;

test('a housekeeping day left ahead by a clock that ran ahead is not waited for: the retention runs the next day', async (t) => {
  // The clock runs five months ahead (10 June instead of 10 January) for the start-up pass.
  const clock = new ManualClock('2026-06-10T12:00:00Z');
  const portal = await startTestPortal({ clock, config: { connectionLogRetention: 'P30D' } });
  t.after(() => portal.close());
  await portal.reconcile();
  const db = portal.portal.ctx.db;
  const nodeNumber = asNodeNumber(0);
  // Put right: 10 January. A session that ended on 1 December is past its retention.
  clock.advance(Date.parse('2026-01-10T12:00:00Z') - clock.now().getTime());
  await openConnection(db, {
    userId: asUserId('alice'),
    profileId: asProfileId('employees'),
    vpnProto: 'openvpn',
    connectionId: 'old',
    nodeNumber,
    ipFour: '10.44.0.9',
    ipSix: 'fd44::9',
    originatingIp: null,
    connectedAt: new Date('2025-12-01T09:00:00Z'),
  });
  await closeConnection(db, {
    connectionId: 'old',
    nodeNumber,
    disconnectedAt: new Date('2025-12-01T10:00:00Z'),
    bytesIn: 1,
    bytesOut: 2,
  });

  clock.advance(DAY); // 11 January
  const result = await runHousekeepingIfDue(portal.portal.ctx);
  assert.notEqual(result, null, 'the housekeeping ran although the day it last ran (10 June) is ahead');
  assert.equal(result?.connectionLogDeleted, 1);
  assert.equal(result?.aggregatedDays.join(), '2026-01-10', 'yesterday became daily statistics');
  assert.deepEqual((await portal.admin.connectionLog({})).connection_log, []);
  assert.equal(await runHousekeepingIfDue(portal.portal.ctx), null, 'and it runs once that day');
});

test('a housekeeping day one ahead, another instance whose clock is a little ahead past midnight, is that day done', async (t) => {
  const clock = new ManualClock('2026-01-11T00:00:30Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  await portal.reconcile(); // 11 January's housekeeping
  clock.advance(-60_000); // 10 January, 23:59:30: this instance's clock is a minute behind that one's
  assert.equal(await runHousekeepingIfDue(portal.portal.ctx), null);
});
