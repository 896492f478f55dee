// OpenVPN sessions whose end the node never reported: a reconcile pass ends them by the
// node's own client list, so nobody stays online (and attributed an address) for ever. And a
// disconnect of no open session ends nothing and announces nothing; one of two sessions open on
// the same address ends the older, whose end it must be, and one that says the connection's age
// never a session that began after it. A disconnect whose recording fails part
// way ends nothing, so the node's report again ends the session for every listener.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import { DISCONNECT_REPORT_GRACE_MS, endUnlistedOpenVpnSessions } from '../../../src/core/sessions/index.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { formatAtom } from '../../../src/shared/time.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import {
  openVpnConfiguration,
  openVpnEmployees,
  postOpenVpnDisconnect,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../../support/openvpn-sessions.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { startTestPortal } from '../../support/test-portal.js';

/** A portal with one OpenVPN profile on a stand-in node that lists no client, on a clock the test moves. */
async function portalWithEmptyNode(t: TestContext) {
  const clock = { now: new Date() };
  const lab = await startPortalWithNode({
    clock: { now: () => clock.now },
    config: (nodeUrl) => ({
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          oRangeFour: '10.61.0.0/24',
          oRangeSix: 'fd61::/64',
          nodeUrl,
        },
      ],
    }),
  });
  t.after(lab.close);
  const { portal } = lab;
  await portal.admin.create({ user_id: 'hana', profile_id: 'employees' }, 'application/x-openvpn-profile');
  const [configuration] = await portal.admin.userConfigurationList('hana');
  const commonName = configuration?.connection_id ?? '';
  const history = async () =>
    (await connectionHistory(portal.portal.ctx.db, commonName)).sort((a, b) => a.ipFour.localeCompare(b.ipFour));
  const later = (ms: number) => {
    clock.now = new Date(clock.now.getTime() + ms);
  };
  return { portal, commonName, history, later, clock };
}

/**
 * A portal with the OpenVPN profile on a clock the test moves (`later`), one configuration of
 * `userId`, and the session ends it published.
 */
async function openVpnPortalOnOwnClock(t: TestContext, userId: string) {
  let now = new Date();
  const portal = await startTestPortal({ config: openVpnEmployees, clock: { now: () => now } });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const ended: PortalEvent[] = [];
  ctx.events.afterCommit((event) => {
    if (event.type === 'session.ended') ended.push(event);
  });
  const commonName = await openVpnConfiguration(portal, userId);
  const later = (ms: number) => {
    now = new Date(now.getTime() + ms);
  };
  return { portal, ctx, ended, commonName, later };
}

test('a reconcile pass ends the OpenVPN sessions the node no longer lists, once they are a minute old and missed for 30 s, and only those', async (t) => {
  const { portal, commonName, history, later, clock } = await portalWithEmptyNode(t);
  const ended = async () => (await history()).map((entry) => [entry.ipFour, entry.disconnectedAt !== null] as const);

  // The node reported a connect, then crashed: its OpenVPN lists no client, and no disconnect came.
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.61.0.2' });
  await portal.reconcile();
  assert.deepEqual(await ended(), [['10.61.0.2', false]], 'a session younger than a minute is not judged yet');

  later(2 * 60_000);
  const firstMissed = clock.now;
  // Meanwhile the same certificate connected again, from another address, a moment ago.
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '198.51.100.4', ip_four: '10.61.0.3' });
  await portal.reconcile();
  assert.deepEqual(
    await ended(),
    [
      ['10.61.0.2', false],
      ['10.61.0.3', false],
    ],
    'missed once: its disconnect report may be on its way',
  );

  later(DISCONNECT_REPORT_GRACE_MS);
  await portal.reconcile();
  const [lost] = await history();
  assert.deepEqual(
    await ended(),
    [
      ['10.61.0.2', true],
      ['10.61.0.3', false],
    ],
    'the session missed for 30 s ended as lost; the new one is not judged yet',
  );
  assert.equal(lost?.disconnectedAt, formatAtom(firstMissed), "it ended when the node's list first missed it");

  // The lost session's disconnect arrives after all: it closes nothing else.
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.61.0.2' });
  assert.deepEqual(await ended(), [
    ['10.61.0.2', true],
    ['10.61.0.3', false],
  ]);
});

test('a client back on the address of a session ended as lost is a new session, with a wait of its own', async (t) => {
  const clock = { now: new Date() };
  const portal = await startTestPortal({ config: openVpnEmployees, clock: { now: () => clock.now } });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'ivo');
  const node = asNodeNumber(0);
  // The node is listed by the test alone (the configured one answers nobody): it lists no client.
  const passAfter = (ms: number) => {
    clock.now = new Date(clock.now.getTime() + ms);
    return endUnlistedOpenVpnSessions(ctx, node, [], clock.now);
  };

  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  assert.equal(await passAfter(2 * 60_000), 0, 'first missed');
  assert.equal(await passAfter(DISCONNECT_REPORT_GRACE_MS), 1, 'missed 30 s later: lost');

  // ivo is back on the same address; the next listing, minutes later, misses him again.
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  assert.equal(await passAfter(5 * 60_000), 0, "his new session's first miss, not the old one's");
  assert.equal(await passAfter(DISCONNECT_REPORT_GRACE_MS), 1);
  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => entry.disconnectedAt !== null),
    [true, true],
  );
});

test('a session the portal has just disconnected, missing from a listing before its disconnect report arrives, is ended by that report with its counters, not as lost', async (t) => {
  const { portal, commonName, history, later } = await portalWithEmptyNode(t);
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.61.0.2' });
  later(10 * 60_000);

  // hana is disabled; her client is gone from the node's list, and a pass lists the node
  // before the node's disconnect report comes.
  await portal.admin.disableUser('hana');
  await portal.reconcile();
  assert.equal((await history())[0]?.disconnectedAt, null, 'not ended as lost at the first listing that misses it');

  later(5_000);
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.61.0.2' });
  const [session] = await history();
  assert.notEqual(session?.disconnectedAt ?? null, null);
  assert.deepEqual(
    [session?.bytesIn, session?.bytesOut],
    [10, 20],
    "the report's counters, not a lost session's zeros",
  );

  later(DISCONNECT_REPORT_GRACE_MS);
  await portal.reconcile();
  assert.deepEqual(await history(), [session], 'a later pass changes nothing of it');
});

test('a disconnect of no open session on this node answers OK and announces no session end', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const ended: PortalEvent[] = [];
  ctx.events.inTransaction(async (event) => {
    if (event.type === 'session.ended') ended.push(event);
  });
  ctx.events.afterCommit((event) => {
    if (event.type === 'session.ended') ended.push(event);
  });
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  const commonName = await openVpnConfiguration(portal, 'ines');

  // Never connected: the node's report is answered, and nothing ends.
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await settle();
  assert.deepEqual(ended, [], 'no session.ended for a configuration that never connected');

  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await settle();
  assert.equal(ended.length, 2, 'the real session ends once: recorded and published');

  // The same report again: the session is closed already.
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await settle();
  assert.equal(ended.length, 2, 'a repeated disconnect announces nothing');
  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => [entry.ipFour, entry.bytesIn]),
    [['10.60.0.2', 10]],
    'one session, closed by the first disconnect',
  );
});

test("a late disconnect report of a client's old connection ends that one, not its newer connection on the same address", async (t) => {
  const { portal, ctx, ended, commonName, later } = await openVpnPortalOnOwnClock(t, 'jona');

  // The client left and came back at once: the node gave the freed address to its new
  // connection, whose connect reached the portal before the old connection's end (a report
  // retried after a failure, or taken by another portal instance).
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  later(5_000);
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '198.51.100.20', ip_four: '10.60.0.2' });
  later(5_000);
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await new Promise((resolve) => setImmediate(resolve));

  const history = await connectionHistory(ctx.db, commonName);
  assert.deepEqual(
    history.map((entry) => [entry.bytesIn, entry.disconnectedAt === null]),
    [
      [10, false],
      [null, true],
    ],
    'the old connection closed with the counters; the one still connected stays open',
  );
  assert.deepEqual(
    ended.map((event) => (event.type === 'session.ended' ? event.session?.originatingIp : undefined)),
    ['192.0.2.10'],
    'the end announced is the old connection’s',
  );
});

test('a disconnect report repeated after its connection ended and the client connected again on the same address leaves the new session open', async (t) => {
  const { portal, ctx, ended, commonName, later } = await openVpnPortalOnOwnClock(t, 'pia');

  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  later(60_000);
  // The first report commits, but its answer is lost: the node reports again a second on, and
  // meanwhile the client came back on the address its old connection freed.
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2', age_ms: '60000' });
  later(400);
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '198.51.100.20', ip_four: '10.60.0.2' });
  later(700);
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2', age_ms: '61100' });
  await new Promise((resolve) => setImmediate(resolve));

  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => [entry.bytesIn, entry.disconnectedAt === null]),
    [
      [10, false],
      [null, true],
    ],
    'the old connection closed once; the new one stays open',
  );
  assert.deepEqual(
    ended.map((event) => (event.type === 'session.ended' ? event.session?.originatingIp : undefined)),
    ['192.0.2.10'],
    'only the old connection’s end is announced',
  );
});

test('a disconnect report with the connection’s age ends the session it names however long the connection lasted, also when an older one is open on the address', async (t) => {
  const { portal, ctx, commonName, later } = await openVpnPortalOnOwnClock(t, 'ravi');

  // The portal recorded each start a little before the node heard its answer and began counting.
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  later(5_000);
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '198.51.100.20', ip_four: '10.60.0.3' });
  // Three days on, by a node clock a minute fast over them: its age is too long, the leeway covers it.
  later(3 * 86_400_000);
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.3', age_ms: String(3 * 86_400_000 + 60_000) });
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2', age_ms: String(3 * 86_400_000 + 65_000) });

  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => [entry.ipFour, entry.disconnectedAt === null]),
    [
      ['10.60.0.2', false],
      ['10.60.0.3', false],
    ],
    'both ended by their own reports',
  );
});

test('a session whose end is heard only after the node gave its address to another user ends when that one began, so the address names one user', async (t) => {
  const clock = { now: new Date('2026-03-01T10:00:00Z') };
  const portal = await startTestPortal({ config: openVpnEmployees, clock: { now: () => clock.now } });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const node = asNodeNumber(0);
  const later = (ms: number) => {
    clock.now = new Date(clock.now.getTime() + ms);
  };
  const holders = async (at: string) => {
    const response = await portal.get('/connection_log', { ip: '10.60.0.2', at });
    return (response.json() as { connection_log: { user_id: string }[] }).connection_log.map((entry) => entry.user_id);
  };
  const [kai, lea, mio] = [
    await openVpnConfiguration(portal, 'kai'),
    await openVpnConfiguration(portal, 'lea'),
    await openVpnConfiguration(portal, 'mio'),
  ];

  // kai connected; 10 s later the node crashed, and when it came back gave his address to lea.
  await reportOpenVpnConnect(portal, kai, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  later(20_000);
  await reportOpenVpnConnect(portal, lea, { originating_ip: '192.0.2.11', ip_four: '10.60.0.2' });
  const leaFrom = formatAtom(clock.now);
  // kai's session ended, as lost, when lea's connect was recorded: the node's listings that no
  // longer show him find nothing left to end.
  const listed = [{ commonName: lea, ipFour: '10.60.0.2' }];
  later(45_000);
  assert.equal(await endUnlistedOpenVpnSessions(ctx, node, listed, clock.now), 0, 'first missed');
  later(DISCONNECT_REPORT_GRACE_MS);
  assert.equal(await endUnlistedOpenVpnSessions(ctx, node, listed, clock.now), 0, 'ended already');
  assert.equal(
    (await connectionHistory(ctx.db, kai))[0]?.disconnectedAt,
    leaFrom,
    'kai held the address until lea got it at the latest',
  );
  assert.deepEqual(await holders('2026-03-01T10:00:50Z'), ['lea'], 'lea alone held it after she connected');

  // A disconnect reported late, after the address went to the next user, finds it ended there.
  later(60_000);
  await reportOpenVpnConnect(portal, mio, { originating_ip: '192.0.2.12', ip_four: '10.60.0.2' });
  const mioFrom = formatAtom(clock.now);
  later(10_000);
  await reportOpenVpnDisconnect(portal, lea, { ip_four: '10.60.0.2' });
  assert.equal((await connectionHistory(ctx.db, lea))[0]?.disconnectedAt, mioFrom, 'lea held it until mio got it');
  assert.deepEqual(await holders(formatAtom(new Date(clock.now.getTime() - 5_000))), ['mio']);
});

test('a disconnect whose recording fails part way leaves the session open, and the report again ends it with its RADIUS Stop', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'openvpn-disconnect-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  await writeFile(join(folder, 'radius.secret'), 'secret', { mode: 0o600 });
  // Nothing answers on the discard port: the Stop stays in the outbox for the test to see.
  const portal = await startTestPortal({
    config: {
      ...openVpnEmployees,
      accounting: {
        radius: {
          servers: [{ address: '127.0.0.1:9', secretFile: join(folder, 'radius.secret') }],
          interimInterval: 'P1D',
        },
      },
    },
  });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'jonas');
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.12', ip_four: '10.60.0.2' });
  // The last listener's write of the first end fails, as a write does when the database goes away.
  let failures = 1;
  ctx.events.inTransaction(async (event) => {
    if (event.type === 'session.ended' && failures-- > 0) throw new Error('the database went away');
  });
  const ended: PortalEvent[] = [];
  ctx.events.afterCommit((event) => {
    if (event.type === 'session.ended') ended.push(event);
  });
  const stops = () =>
    ctx.db
      .selectFrom('radius_outbox')
      .select('record')
      .where('connection_id', '=', commonName)
      .execute()
      .then((rows) => rows.filter((row) => row.record.includes('"Stop"')).length);

  const failed = await postOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  assert.notEqual(failed.status, 200, 'the node is told the report failed, and reports again');
  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => entry.disconnectedAt),
    [null],
    'the session is still open: nothing of the failed end was kept',
  );
  assert.equal(await stops(), 0);

  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(ended.length, 1, 'the end is announced once, to syslog, the webhooks and the metrics');
  assert.equal(await stops(), 1, 'the RADIUS server is told the session stopped');
  assert.notEqual((await connectionHistory(ctx.db, commonName))[0]?.disconnectedAt ?? null, null);
});
