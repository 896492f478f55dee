// An OpenVPN address the node gave to a new client while the portal still held an older session
// of another user open on it: the older session ends (Lost-Service) in the change that records the
// new connect and before it, so RADIUS and syslog hear the old user's Stop before the new user's Start
// and a firewall mapping addresses to users never unmaps the new user; the old session's late
// disconnect report brings it its counters, and sends nothing.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import { DISCONNECT_REPORT_GRACE_MS, endUnlistedOpenVpnSessions } from '../../../src/core/sessions/index.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { formatAtom } from '../../../src/shared/time.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import {
  openVpnConfiguration,
  queuedAccountingPortal,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../../support/openvpn-sessions.js';

/** A portal whose RADIUS records stay queued (see queuedAccountingPortal); what its listeners were told, in order. */
async function accountingPortal(t: TestContext) {
  const { portal, clock, later } = await queuedAccountingPortal(t);
  const published: string[] = [];
  portal.portal.ctx.events.afterCommit((event: PortalEvent) => {
    if (event.type === 'session.started') published.push(`start ${event.configuration.userId} ${event.ipFour}`);
    if (event.type === 'session.ended') published.push(`stop ${event.session?.userId} ${event.session?.ipFour}`);
  });
  return { portal, ctx: portal.portal.ctx, clock, later, published };
}

test('a session lost without a disconnect report stops before the next user on its address starts, in RADIUS and in the published events', async (t) => {
  const { portal, ctx, clock, later, published } = await accountingPortal(t);
  const kai = await openVpnConfiguration(portal, 'kai');
  const lea = await openVpnConfiguration(portal, 'lea');

  // Kai's connection is lost without a disconnect report; the node gives his address to Lea.
  await reportOpenVpnConnect(portal, kai, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  later(20_000);
  await reportOpenVpnConnect(portal, lea, { originating_ip: '192.0.2.11', ip_four: '10.60.0.2' });
  const leaFrom = formatAtom(clock.now);
  // The node's listings no longer show Kai: nothing is left for them to end.
  const listed = [{ commonName: lea, ipFour: '10.60.0.2' }];
  later(45_000);
  await endUnlistedOpenVpnSessions(ctx, asNodeNumber(0), listed, clock.now);
  later(DISCONNECT_REPORT_GRACE_MS);
  await endUnlistedOpenVpnSessions(ctx, asNodeNumber(0), listed, clock.now);
  // Kai's disconnect is reported at last: it brings his session its counters, and ends nothing.
  await reportOpenVpnDisconnect(portal, kai, { ip_four: '10.60.0.2' });
  await new Promise((resolve) => setImmediate(resolve));

  const queued = await ctx.db
    .selectFrom('radius_outbox')
    .select(['record'])
    .where('address', '=', '10.60.0.2')
    .orderBy('record_id')
    .execute();
  assert.deepEqual(
    queued.map((row) => {
      const record = JSON.parse(row.record) as { statusType: string; userName: string };
      return `${record.statusType} ${record.userName}`;
    }),
    ['Start kai', 'Stop kai', 'Start lea'],
    'the RADIUS server hears Kai stop before Lea starts on 10.60.0.2',
  );
  assert.deepEqual(
    published,
    ['start kai 10.60.0.2', 'stop kai 10.60.0.2', 'start lea 10.60.0.2'],
    'syslog, webhooks and the connect script hear them in that order too',
  );
  const [kaiSession] = await connectionHistory(ctx.db, kai);
  assert.equal(kaiSession?.disconnectedAt, leaFrom, 'Kai held the address until Lea got it');
  assert.deepEqual([kaiSession?.bytesIn, kaiSession?.bytesOut], [10, 20], 'his late report’s counters are his');
  assert.equal((await connectionHistory(ctx.db, lea))[0]?.disconnectedAt, null, 'Lea is still connected');
});
