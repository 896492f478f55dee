// A session's end is announced once, by the change that closes its history row, however many
// changes heard of it at the same time: a node's disconnect report and its retry (the agent
// reports again a second later when the answer was lost), or a reconcile pass that ends a session
// as lost while its report comes in. The change that read the session open before the other one
// closed it announces nothing (of a batch, nothing of that session): no second webhook, syslog
// stop or count, which, coming after the next user's start on the address, would unmap that user.
// So is a WireGuard session's start, by the change that opens its row: a second pass that saw
// the same handshake (another instance, a pass after a lost lock) announces no second start. A
// late report of a session the client's reconnect ended meanwhile brings it only its counters.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { PortalContext } from '../../../src/core/context.js';
import type { PortalEvent, PortalEvents } from '../../../src/core/events.js';
import {
  endUnlistedOpenVpnSessions,
  observeWireGuardSessions,
  recordOpenVpnDisconnect,
} from '../../../src/core/sessions/index.js';
import type { DaemonPeer } from '../../../src/node-client/daemon-client.js';
import { asNodeNumber, asWireGuardKey } from '../../../src/shared/ids.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import {
  openVpnConfiguration,
  openVpnEmployees,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../../support/openvpn-sessions.js';
import { startTestPortal } from '../../support/test-portal.js';
import { subscribe } from '../../support/webhook-subscriptions.js';

/**
 * The portal's seam, with every change held before it begins until `release()`: the use case has
 * read what it decided on, and writes nothing yet (so SQLite's one connection stays free).
 */
function heldBeforeChange(events: PortalEvents) {
  let reach = (): void => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  let release = (): void => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const held = new Proxy(events, {
    get(target, property) {
      if (property === 'change') {
        return async (...args: unknown[]) => {
          reach();
          await released;
          return Reflect.apply(target.change, target, args) as unknown;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { events: held, reached, release };
}

/**
 * A portal with the OpenVPN profile (on `clock`, when given), a webhook for session ends, and
 * the ends it published.
 */
async function portalHearingEnds(t: TestContext, clock?: { readonly now: () => Date }) {
  const portal = await startTestPortal({ config: openVpnEmployees, ...(clock === undefined ? {} : { clock }) });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  await subscribe(ctx.db, 'wh_sessions', ['session.ended']);
  const published: Extract<PortalEvent, { type: 'session.ended' }>[] = [];
  ctx.events.afterCommit((event) => {
    if (event.type === 'session.ended') published.push(event);
  });
  const webhookEnds = async () =>
    (
      await ctx.db
        .selectFrom('webhook_deliveries')
        .select('event_type')
        .where('event_type', '=', 'session.ended')
        .execute()
    ).length;
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { portal, ctx, published, webhookEnds, settle };
}

test('a disconnect report that read its session open while its retry ended it announces nothing: the end is heard once', async (t) => {
  const { portal, ctx, published, webhookEnds, settle } = await portalHearingEnds(t);
  const commonName = await openVpnConfiguration(portal, 'ada');
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });

  // The first report found the session open, and is held before its change…
  const held = heldBeforeChange(ctx.events);
  const first = recordOpenVpnDisconnect({ ...ctx, events: held.events } satisfies PortalContext, {
    nodeNumber: asNodeNumber(0),
    commonName,
    bytesIn: 1,
    bytesOut: 2,
    ipFour: '10.60.0.2',
  });
  await held.reached;
  // …while its retry ends the session.
  await reportOpenVpnDisconnect(portal, commonName, { ip_four: '10.60.0.2' });
  held.release();
  await first;
  await settle();

  assert.deepEqual(
    published.map((event) => [event.connectionId, event.bytesIn]),
    [[commonName, 10]],
    'one session.ended, the retry’s, which closed the row',
  );
  assert.equal(await webhookEnds(), 1, 'one webhook delivery of the end');
  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => [entry.bytesIn, entry.disconnectedAt !== null]),
    [[10, true]],
    'the row closed once, by the change that announced the end',
  );
});

test('a late disconnect report that read its session open while the client’s reconnect ended it announces nothing again, and brings that session its counters', async (t) => {
  // A clock that stands still: both connections begin in the same second, so the start alone
  // does not tell their rows apart.
  const now = new Date('2026-03-01T10:00:00.250Z');
  const { portal, ctx, published, webhookEnds, settle } = await portalHearingEnds(t, { now: () => now });
  const commonName = await openVpnConfiguration(portal, 'ada');
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });

  // The old connection's report found its session open, and is held before its change…
  const held = heldBeforeChange(ctx.events);
  const report = recordOpenVpnDisconnect({ ...ctx, events: held.events } satisfies PortalContext, {
    nodeNumber: asNodeNumber(0),
    commonName,
    bytesIn: 1,
    bytesOut: 2,
    ipFour: '10.60.0.2',
  });
  await held.reached;
  // …while the client's new connection on the same address ends it, before its own start.
  await reportOpenVpnConnect(portal, commonName, { originating_ip: '198.51.100.20', ip_four: '10.60.0.2' });
  held.release();
  await report;
  await settle();

  assert.deepEqual(
    published.map((event) => [event.session?.originatingIp, event.cause]),
    [['192.0.2.10', 'replaced']],
    'one session.ended, the connect’s, before the new start',
  );
  assert.equal(await webhookEnds(), 1, 'one webhook delivery of the end');
  // One start for both: the history lists them in either order.
  const rows = (await connectionHistory(ctx.db, commonName)).map((entry) => [
    entry.bytesIn,
    entry.disconnectedAt !== null,
  ]);
  assert.deepEqual(
    rows.sort((a, b) => Number(b[1]) - Number(a[1])),
    [
      [1, true],
      [null, false],
    ],
    'the old row has the report’s counters; the new connection stays open',
  );
});

test('a reconcile pass that ends unlisted sessions as lost leaves out the one a disconnect report ended meanwhile', async (t) => {
  const { portal, ctx, published, webhookEnds, settle } = await portalHearingEnds(t);
  const ada = await openVpnConfiguration(portal, 'ada');
  const ben = await openVpnConfiguration(portal, 'ben');
  await reportOpenVpnConnect(portal, ada, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });
  await reportOpenVpnConnect(portal, ben, { originating_ip: '192.0.2.11', ip_four: '10.60.0.3' });
  const node = asNodeNumber(0);
  const now = Date.now();
  // The node's list misses both, two listings 30 seconds apart and more (a listing of its own).
  assert.equal(await endUnlistedOpenVpnSessions(ctx, node, [], new Date(now + 120_000)), 0);

  const held = heldBeforeChange(ctx.events);
  const pass = endUnlistedOpenVpnSessions({ ...ctx, events: held.events }, node, [], new Date(now + 180_000));
  await held.reached;
  // ada's disconnect report comes in while the pass is on its way to end both.
  await reportOpenVpnDisconnect(portal, ada, { ip_four: '10.60.0.2' });
  held.release();
  assert.equal(await pass, 1, 'the pass ended one session: ben’s');
  await settle();

  assert.deepEqual(
    published.map((event) => [event.connectionId, event.cause]).sort(),
    [
      [ada, 'disconnected'],
      [ben, 'lost'],
    ].sort(),
    'each session ended once',
  );
  assert.equal(await webhookEnds(), 2);
  assert.deepEqual(
    (await connectionHistory(ctx.db, ada)).map((entry) => [entry.bytesIn, entry.disconnectedAt !== null]),
    [[10, true]],
    'ada’s row keeps the counters of her report',
  );
});

test('a WireGuard pass that saw a handshake another pass started the session for announces no second start', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  await subscribe(ctx.db, 'wh_starts', ['session.started']);
  const published: PortalEvent[] = [];
  ctx.events.afterCommit((event) => {
    if (event.type === 'session.started') published.push(event);
  });
  await portal.admin.create({ user_id: 'cleo', profile_id: 'employees' });
  const peer = await ctx.db.selectFrom('wg_peers').selectAll().executeTakeFirstOrThrow();
  const node = asNodeNumber(Number(peer.node_number));
  const listed: DaemonPeer[] = [
    {
      publicKey: asWireGuardKey(peer.public_key),
      canonicalKey: true,
      ipNet: [`${peer.ip_four}/32`],
      lastHandshakeTime: new Date(),
      onlineSince: new Date(),
      bytesIn: 100,
      bytesOut: 200,
      endpoint: '192.0.2.20:51820',
    },
  ];

  // One pass found no session open, and is held before its change…
  const held = heldBeforeChange(ctx.events);
  const first = observeWireGuardSessions({ ...ctx, events: held.events }, node, listed);
  await held.reached;
  // …while another (a second portal instance, a pass after a lost lock) starts the session.
  await observeWireGuardSessions(ctx, node, listed);
  held.release();
  await first;
  await new Promise((resolve) => setImmediate(resolve));

  assert.equal(published.length, 1, 'one session.started: a second would map the address to cleo again');
  const webhookStarts = await ctx.db
    .selectFrom('webhook_deliveries')
    .select('event_type')
    .where('event_type', '=', 'session.started')
    .execute();
  assert.equal(webhookStarts.length, 1, 'one webhook delivery of the start');
  assert.equal((await connectionHistory(ctx.db, peer.public_key)).length, 1, 'one row in the history');
});
