// A WireGuard session starts at the first handshake of the peer's run, as the node agent says
// (`online_since`), but never before its configuration was made, nor inside the connection's
// session before it: a run the agent kept across a removal and a quick re-add of the key (one
// interface write keeps the handshake), or across the 3-minute boundary the portal judged a
// moment earlier, would otherwise date it there. A run that began after the open session's
// (the device went quiet and came back while no pass looked) ends that session and starts the
// next, also when that run ended before the pass (the device quiet again). A run that began and
// ended between two passes is a session of its own. The node is a
// stand-in that lists what the test says: a real agent gives such runs only in a race, or after
// minutes, that a test cannot call up.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PeerListEntry } from '../../../src/protocol/vpn-daemon.js';
import { formatAtom } from '../../../src/shared/time.js';
import { ManualClock } from '../../support/admin-keys.js';
import { answerJson, startPortalOnStandIn, startStandInNode } from '../../support/stand-in-node.js';

/** A stand-in node that lists `listed` and takes every peer change. */
async function listingNode(t: TestContext): Promise<{ readonly url: string; listed: PeerListEntry[] }> {
  const node = { url: '', listed: [] as PeerListEntry[] };
  node.url = await startStandInNode(t, (path, response) => {
    if (path === '/w/peer_list') answerJson(response, { peer_list: node.listed });
    else if (path.startsWith('/w/')) response.writeHead(204).end();
    else return false;
    return true;
  });
  return node;
}

test('a run the node says began hours ago starts the session no earlier than its configuration, nor inside the session before it', async (t) => {
  const node = await listingNode(t);
  const portal = await startPortalOnStandIn(t, node.url);
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  const peer = await portal.portal.ctx.db.selectFrom('wg_peers').selectAll().executeTakeFirstOrThrow();
  const online = (onlineSince: Date): PeerListEntry[] => [
    {
      public_key: peer.public_key,
      ip_net: [`${peer.ip_four}/32`],
      last_handshake_time: formatAtom(new Date()),
      online_since: formatAtom(onlineSince),
      bytes_in: 100,
      bytes_out: 200,
    },
  ];
  const sessions = async () => (await portal.admin.connectionLog({ user_id: 'alice' })).connection_log.reverse();

  node.listed = online(new Date(Date.now() - 2 * 3_600_000));
  await portal.reconcile();
  const [first] = await sessions();
  assert.equal(first?.connected_at, peer.created_at, 'not two hours before the configuration was made');

  // The session ends with the peer's removal; the key comes back, and its run, the node says, never broke.
  await sleep(1_100);
  await portal.admin.disableUser('alice');
  await sleep(1_100);
  await portal.admin.enableUser('alice');
  node.listed = online(new Date(Date.parse(first?.connected_at ?? '')));
  await portal.reconcile();
  const [ended, second] = await sessions();
  assert.notEqual(ended?.disconnected_at, null);
  assert.equal(second?.connected_at, ended?.disconnected_at, 'not inside the session before it');
});

test('a run the node says began while no pass looked ends the open session there and starts the next', async (t) => {
  const node = await listingNode(t);
  const clock = new ManualClock(formatAtom(new Date()));
  const portal = await startPortalOnStandIn(t, node.url, { clock });
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  const peer = await portal.portal.ctx.db.selectFrom('wg_peers').selectAll().executeTakeFirstOrThrow();
  const online = (since: Date): PeerListEntry[] => [
    {
      public_key: peer.public_key,
      ip_net: [`${peer.ip_four}/32`],
      last_handshake_time: formatAtom(clock.now()),
      online_since: formatAtom(since),
      bytes_in: 100,
      bytes_out: 200,
    },
  ];
  const createdAt = clock.now();
  node.listed = online(createdAt);
  await portal.reconcile();

  // Ten minutes on, no pass in between: the device went quiet and came back a minute ago.
  clock.advance(10 * 60_000);
  const comeBack = new Date(clock.now().getTime() - 60_000);
  node.listed = online(comeBack);
  await portal.reconcile();
  const sessions = (await portal.admin.connectionLog({ user_id: 'bob' })).connection_log.reverse();
  assert.deepEqual(
    sessions.map((session) => [session.connected_at, session.disconnected_at]),
    [
      [formatAtom(createdAt), formatAtom(comeBack)],
      [formatAtom(comeBack), null],
    ],
  );
});

test('a run that began and ended while no pass looked is a session of its own, which an abuse report of its minutes finds, recorded once', async (t) => {
  const node = await listingNode(t);
  const clock = new ManualClock(formatAtom(new Date()));
  const portal = await startPortalOnStandIn(t, node.url, { clock });
  await portal.admin.create({ user_id: 'carol', profile_id: 'employees' });
  const peer = await portal.portal.ctx.db.selectFrom('wg_peers').selectAll().executeTakeFirstOrThrow();
  const start = clock.now();
  await portal.reconcile(); // nothing online yet

  // Ten minutes on (the portal was down, or cut off from the node): carol's device shook hands
  // from minute 1 to minute 3 and has been quiet since.
  clock.advance(10 * 60_000);
  const minute = (n: number) => new Date(start.getTime() + n * 60_000);
  node.listed = [
    {
      public_key: peer.public_key,
      ip_net: [`${peer.ip_four}/32`],
      last_handshake_time: formatAtom(minute(3)),
      online_since: formatAtom(minute(1)),
      bytes_in: 100,
      bytes_out: 200,
    },
  ];
  await portal.reconcile();
  clock.advance(60_000);
  await portal.reconcile(); // the same list again: the run is recorded already
  const sessions = (await portal.admin.connectionLog({ user_id: 'carol' })).connection_log;
  assert.deepEqual(
    sessions.map((session) => [session.connected_at, session.disconnected_at, session.bytes_in]),
    [[formatAtom(minute(1)), formatAtom(minute(6)), 100]],
    'from its first handshake to 3 minutes after its last',
  );
  const report = await portal.get('/attribution', {
    ip: peer.ip_four,
    at: formatAtom(minute(2)),
    reason: 'CSIRT ticket 4714',
  });
  assert.equal(report.status, 200, report.text);
  assert.deepEqual(
    (report.json() as { sessions: { user_id: string }[] }).sessions.map((session) => session.user_id),
    ['carol'],
  );
});

test('a device that went quiet, came back from elsewhere and went quiet again while no pass looked is two sessions, the second from its own address', async (t) => {
  const node = await listingNode(t);
  const clock = new ManualClock(formatAtom(new Date()));
  // The client's address is kept past the session, for the abuse report below.
  const portal = await startPortalOnStandIn(t, node.url, { clock, config: { Log: { originatingIp: true } } });
  await portal.admin.create({ user_id: 'dan', profile_id: 'employees' });
  const peer = await portal.portal.ctx.db.selectFrom('wg_peers').selectAll().executeTakeFirstOrThrow();
  const start = clock.now();
  const minute = (n: number) => new Date(start.getTime() + n * 60_000);
  const listed = (since: Date, last: Date, from: string): PeerListEntry[] => [
    {
      public_key: peer.public_key,
      ip_net: [`${peer.ip_four}/32`],
      last_handshake_time: formatAtom(last),
      online_since: formatAtom(since),
      bytes_in: 100,
      bytes_out: 200,
      endpoint: `${from}:51820`,
    },
  ];
  node.listed = listed(minute(0), minute(0), '198.51.100.1');
  await portal.reconcile();

  // Twenty minutes on, the node tells of a later run: from minute 10 to 12, from another address.
  clock.advance(20 * 60_000);
  node.listed = listed(minute(10), minute(12), '203.0.113.9');
  await portal.reconcile();
  clock.advance(60_000);
  await portal.reconcile(); // the same list again: nothing more is recorded
  const sessions = (await portal.admin.connectionLog({ user_id: 'dan' })).connection_log.reverse();
  assert.deepEqual(
    sessions.map((session) => [session.connected_at, session.disconnected_at, session.originating_ip]),
    [
      [formatAtom(minute(0)), formatAtom(minute(10)), '198.51.100.1'],
      [formatAtom(minute(10)), formatAtom(minute(15)), '203.0.113.9'],
    ],
    'the first ended by the later run at the latest; the later run is a session of its own',
  );
  const report = await portal.get('/connection_log', { ip: '203.0.113.9', at: formatAtom(minute(11)) });
  assert.equal(report.status, 200, report.text);
  assert.deepEqual(
    (report.json() as { connection_log: { user_id: string }[] }).connection_log.map((session) => session.user_id),
    ['dan'],
    "an abuse report about the later run's address finds dan",
  );
});
