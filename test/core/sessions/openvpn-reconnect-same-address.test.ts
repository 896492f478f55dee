// An OpenVPN client that reconnects on its own address before the node reported its old
// connection's end: the old session stops before the new one starts (RADIUS, syslog, webhooks),
// so a firewall mapping addresses to users never unmaps a user who is still connected, and the
// late disconnect report still brings the old connection's counters to its own history row.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import { formatAtom } from '../../../src/shared/time.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import {
  openVpnConfiguration,
  postOpenVpnDisconnect,
  queuedAccountingPortal,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../../support/openvpn-sessions.js';

/**
 * A portal whose RADIUS records stay queued (see queuedAccountingPortal), with one OpenVPN
 * configuration of jona's; what its listeners were told after each commit, in order, each session
 * named by its client's own address.
 */
async function reconnectingClient(t: TestContext) {
  const { portal, clock, later } = await queuedAccountingPortal(t);
  const ctx = portal.portal.ctx;
  const published: string[] = [];
  ctx.events.afterCommit((event: PortalEvent) => {
    if (event.type === 'session.started') published.push(`start ${event.originatingIp}`);
    if (event.type === 'session.ended') published.push(`stop ${event.session?.originatingIp}`);
  });
  /** The RADIUS records queued for 10.60.0.2, oldest first: which, and of which session (1 or 2, by its Start). */
  const accounted = async () => {
    const rows = await ctx.db
      .selectFrom('radius_outbox')
      .select(['record'])
      .where('address', '=', '10.60.0.2')
      .orderBy('record_id')
      .execute();
    const sessions: string[] = [];
    return rows.map((row) => {
      const record = JSON.parse(row.record) as { statusType: string; sessionId: string };
      if (!sessions.includes(record.sessionId)) sessions.push(record.sessionId);
      return `${record.statusType} ${sessions.indexOf(record.sessionId) + 1}`;
    });
  };
  const history = async () =>
    (await connectionHistory(ctx.db, commonName)).map((entry) => ({
      disconnectedAt: entry.disconnectedAt,
      bytes: [entry.bytesIn, entry.bytesOut],
    }));
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  const commonName = await openVpnConfiguration(portal, 'jona');
  return { portal, clock, later, published, accounted, history, settle, commonName };
}

test('a client back on its own address before its old connection’s end was reported stops the old session before the new one starts, and the late report brings the old one its counters', async (t) => {
  const { portal, clock, later, published, accounted, history, settle, commonName } = await reconnectingClient(t);

  // Jona's client lost its link and came straight back: the node gave the configuration's address
  // to the new connection before it reported the old one's end (retried after a failure, say).
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  later(5_000);
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '198.51.100.20', ip_four: '10.60.0.2' });
  const secondFrom = formatAtom(clock.now);
  await settle();
  assert.deepEqual(
    await accounted(),
    ['Start 1', 'Stop 1', 'Start 2'],
    'the RADIUS server hears the old session stop before the new one starts on 10.60.0.2',
  );
  assert.deepEqual(
    published,
    ['start 192.0.2.10', 'stop 192.0.2.10', 'start 198.51.100.20'],
    'syslog, webhooks and the connect script hear them in that order too',
  );

  // The old connection's end is reported at last, without its age (an older agent).
  later(5_000);
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await settle();
  assert.deepEqual(
    await history(),
    [
      { disconnectedAt: secondFrom, bytes: [10, 20] },
      { disconnectedAt: null, bytes: [null, null] },
    ],
    'the old session keeps its end and gets its counters; the new one stays open',
  );
  assert.deepEqual(await accounted(), ['Start 1', 'Stop 1', 'Start 2'], 'the old session is not stopped twice');
  assert.equal(published.length, 3, 'nor is its end published again');

  // The new connection's own end, when it comes, is the new session's.
  later(60_000);
  const postedAt = formatAtom(clock.now);
  await postOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2', bytes_in: '30', bytes_out: '40' });
  await settle();
  assert.deepEqual((await history())[1], { disconnectedAt: postedAt, bytes: [30, 40] });
  assert.deepEqual(await accounted(), ['Start 1', 'Stop 1', 'Start 2', 'Stop 2']);
  assert.deepEqual(published, ['start 192.0.2.10', 'stop 192.0.2.10', 'start 198.51.100.20', 'stop 198.51.100.20']);
});

test('a late report that says its connection’s age fills in the old session once, and its repeat ends nothing', async (t) => {
  const { portal, clock, later, published, accounted, history, settle, commonName } = await reconnectingClient(t);

  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  later(60_000);
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '198.51.100.20', ip_four: '10.60.0.2' });
  const secondFrom = formatAtom(clock.now);
  // The old connection's report, a second after the new one began, and its repeat a second on.
  later(1_000);
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2', age_ms: '61000' });
  later(1_000);
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2', age_ms: '62000' });
  await settle();

  assert.deepEqual(await history(), [
    { disconnectedAt: secondFrom, bytes: [10, 20] },
    { disconnectedAt: null, bytes: [null, null] },
  ]);
  assert.deepEqual(await accounted(), ['Start 1', 'Stop 1', 'Start 2']);
  assert.deepEqual(published, ['start 192.0.2.10', 'stop 192.0.2.10', 'start 198.51.100.20']);
});
