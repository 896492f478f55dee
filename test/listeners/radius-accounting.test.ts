// The RADIUS accounting listener writes a session's records into the outbox with the session
// change itself: an OpenVPN connect and disconnect (recorded outside a change) give a Start and a
// Stop of one Acct-Session-Id; a change that rolls back leaves nothing; a reconnect reported
// before the first connection's end keeps both sessions, and each disconnect ends the session it
// names (by its start and address; the oldest, when it names none), so an end announced twice
// never stops the client's newer session. A Stop never reports less traffic than an Interim-Update did.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PortalEvent } from '../../src/core/events.js';
import { noteSessionCounters, parseRecord } from '../../src/core/accounting/index.js';
import type { AccountingRecord } from '../../src/protocol/radius.js';
import { asNodeNumber, asProfileId, asUserId } from '../../src/shared/ids.js';
import { formatAtom } from '../../src/shared/time.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

describe('the RADIUS accounting outbox listener', () => {
  let portal: TestPortal;
  let folder: string;

  /**
   * Minutes ago on the real clock, in whole seconds as the portal stores times: the worker drops
   * a record older than accounting.radius.maxAge (a day), so a fixed date would have the records
   * gone once that day passed.
   */
  const minutesAgo = (minutes: number): Date => new Date(Math.floor(Date.now() / 1000 - minutes * 60) * 1000);
  const openVpnStart = (connectionId: string, at: Date, ipFour = '10.45.0.3'): PortalEvent => ({
    type: 'session.started',
    at,
    configuration: {
      userId: asUserId('erin'),
      profileId: asProfileId('employees'),
      connectionId,
      vpnProto: 'openvpn',
      nodeNumber: asNodeNumber(0),
    },
    ipFour,
    ipSix: 'fd45::3',
    originatingIp: '2001:db8:77::5',
  });
  /** The records queued for a configuration, oldest first. */
  const queued = async (connectionId: string): Promise<AccountingRecord[]> => {
    const rows = await portal.portal.ctx.db
      .selectFrom('radius_outbox')
      .select(['record', 'record_id'])
      .where('connection_id', '=', connectionId)
      .orderBy('record_id')
      .execute();
    return rows.map((row) => parseRecord(row.record));
  };

  before(async () => {
    folder = await mkdtemp(join(tmpdir(), 'radius-listener-'));
    await writeFile(join(folder, 'radius.secret'), 'secret', { mode: 0o600 });
    // Nothing answers on the discard port: records stay in the outbox for the test to read. The
    // sessions began minutes ago: with the default interval the worker could queue their
    // Interim-Updates between a test's records, whenever it ran.
    portal = await startTestPortal({
      config: {
        accounting: {
          radius: {
            servers: [{ address: '127.0.0.1:9', secretFile: join(folder, 'radius.secret') }],
            interimInterval: 'P1D',
          },
        },
      },
    });
  });

  after(async () => {
    await portal?.close();
    await rm(folder, { recursive: true, force: true });
  });

  test('an OpenVPN connect and disconnect queue a Start and a Stop of one session', async () => {
    const { ctx } = portal.portal;
    const at = minutesAgo(10);
    await ctx.events.record(ctx.db, openVpnStart('cn-erin', at));
    const end: PortalEvent = {
      type: 'session.ended',
      at: new Date(at.getTime() + 90_500),
      connectionId: 'cn-erin',
      vpnProto: 'openvpn',
      nodeNumber: asNodeNumber(0),
      bytesIn: 1_000,
      bytesOut: 2_000,
      cause: 'disconnected',
      session: null,
    };
    await ctx.events.record(ctx.db, end);
    const [start, stop, ...more] = await queued('cn-erin');
    assert.equal(more.length, 0);
    assert.equal(start?.statusType, 'Start');
    assert.equal(start?.userName, 'erin');
    assert.equal(start?.framedIpv6Address, 'fd45::3');
    assert.equal(start?.callingStationId, '2001:db8:77::5');
    assert.deepEqual(start?.classes, ['employees']);
    assert.equal(start?.eventTimestamp, at.getTime() / 1000);
    assert.equal(stop?.statusType, 'Stop');
    assert.equal(stop?.sessionId, start?.sessionId);
    assert.equal(stop?.sessionTime, 91);
    assert.equal(stop?.terminateCause, 'User-Request');
    assert.deepEqual([stop?.inputOctets, stop?.outputOctets], [1_000, 2_000]);
    const open = await ctx.db
      .selectFrom('radius_sessions')
      .selectAll()
      .where('connection_id', '=', 'cn-erin')
      .execute();
    assert.deepEqual(open, [], 'the session is no longer accounted for');
  });

  test('a change that rolls back queues nothing', async () => {
    const { ctx } = portal.portal;
    await assert.rejects(
      ctx.events.change(ctx.db, async (_trx, announce) => {
        await announce(openVpnStart('cn-rolled-back', new Date()));
        throw new Error('the change fails after announcing');
      }),
      /fails after announcing/,
    );
    assert.deepEqual(await queued('cn-rolled-back'), []);
  });

  test("a reconnect before the first connection's end is reported: each disconnect ends the oldest session", async () => {
    const { ctx } = portal.portal;
    const first = minutesAgo(10);
    const end = (at: Date): PortalEvent => ({
      type: 'session.ended',
      at,
      connectionId: 'cn-twice',
      vpnProto: 'openvpn',
      nodeNumber: asNodeNumber(0),
      bytesIn: 1,
      bytesOut: 1,
      cause: 'disconnected',
      session: null,
    });
    await ctx.events.record(ctx.db, openVpnStart('cn-twice', first));
    await ctx.events.record(ctx.db, openVpnStart('cn-twice', new Date(first.getTime() + 60_000)));
    await ctx.events.record(ctx.db, end(new Date(first.getTime() + 70_000)));
    const [start, again, stop, ...more] = await queued('cn-twice');
    assert.deepEqual(
      [start?.statusType, again?.statusType, stop?.statusType, more.length],
      ['Start', 'Start', 'Stop', 0],
    );
    assert.notEqual(again?.sessionId, start?.sessionId, 'two sessions');
    assert.equal(stop?.sessionId, start?.sessionId, 'the first one ended');
    assert.equal(stop?.sessionTime, 70);
    await ctx.events.record(ctx.db, end(new Date(first.getTime() + 130_000)));
    const last = (await queued('cn-twice')).at(-1);
    assert.equal(last?.sessionId, again?.sessionId, 'then the second');
    assert.equal(last?.sessionTime, 70);
  });

  test('a reconnect on another tunnel address that ends first stops its own session, not the older one still open', async () => {
    const { ctx } = portal.portal;
    const first = minutesAgo(10);
    const ended = (at: Date, ipFour: string, startedAt: Date): PortalEvent => ({
      type: 'session.ended',
      at,
      connectionId: 'cn-tcp',
      vpnProto: 'openvpn',
      nodeNumber: asNodeNumber(0),
      bytesIn: 1,
      bytesOut: 1,
      cause: 'disconnected',
      session: {
        userId: 'erin',
        profileId: 'employees',
        ipFour,
        ipSix: 'fd45::3',
        originatingIp: null,
        connectedAt: formatAtom(startedAt),
      },
    });
    // The UDP process's connection (10.45.0.3) is not over yet when the client comes back over
    // TCP (10.45.128.3) and leaves again; the UDP process reports its end only later.
    await ctx.events.record(ctx.db, openVpnStart('cn-tcp', first, '10.45.0.3'));
    await ctx.events.record(ctx.db, openVpnStart('cn-tcp', new Date(first.getTime() + 60_000), '10.45.128.3'));
    await ctx.events.record(
      ctx.db,
      ended(new Date(first.getTime() + 90_000), '10.45.128.3', new Date(first.getTime() + 60_000)),
    );
    const [udp, tcp, stop] = await queued('cn-tcp');
    assert.equal(stop?.statusType, 'Stop');
    assert.equal(stop?.sessionId, tcp?.sessionId, 'the TCP session ended');
    assert.equal(stop?.framedIpAddress, '10.45.128.3');
    assert.equal(stop?.sessionTime, 30);
    await ctx.events.record(ctx.db, ended(new Date(first.getTime() + 150_000), '10.45.0.3', first));
    const last = (await queued('cn-tcp')).at(-1);
    assert.equal(last?.sessionId, udp?.sessionId, 'then the UDP one');
    assert.equal(last?.sessionTime, 150);
  });

  test('the end of a tunnel address with no session accounted for stops nothing, not another session of the configuration', async () => {
    const { ctx } = portal.portal;
    const first = minutesAgo(10);
    const ended = (at: Date, ipFour: string, startedAt: Date): PortalEvent => ({
      type: 'session.ended',
      at,
      connectionId: 'cn-twice-ended',
      vpnProto: 'openvpn',
      nodeNumber: asNodeNumber(0),
      bytesIn: 1,
      bytesOut: 1,
      cause: 'lost',
      session: {
        userId: 'erin',
        profileId: 'employees',
        ipFour,
        ipSix: 'fd45::3',
        originatingIp: null,
        connectedAt: formatAtom(startedAt),
      },
    });
    // The UDP connection's end is announced twice (its late report, and a reconcile pass that
    // ended it as lost at the same moment) while the client's TCP connection is still open.
    await ctx.events.record(ctx.db, openVpnStart('cn-twice-ended', first, '10.45.0.3'));
    const tcpStart = new Date(first.getTime() + 60_000);
    await ctx.events.record(ctx.db, openVpnStart('cn-twice-ended', tcpStart, '10.45.128.3'));
    await ctx.events.record(ctx.db, ended(new Date(first.getTime() + 90_000), '10.45.0.3', first));
    await ctx.events.record(ctx.db, ended(new Date(first.getTime() + 90_000), '10.45.0.3', first));
    const [udp, tcp, stop, ...more] = await queued('cn-twice-ended');
    assert.equal(stop?.sessionId, udp?.sessionId, 'the UDP session stopped');
    assert.deepEqual(
      more.map((record) => [record.statusType, record.sessionId === tcp?.sessionId]),
      [],
      'the TCP session, still connected, is not stopped',
    );
    const open = await ctx.db
      .selectFrom('radius_sessions')
      .select('acct_session_id')
      .where('connection_id', '=', 'cn-twice-ended')
      .execute();
    assert.deepEqual(
      open.map((row) => row.acct_session_id),
      [tcp?.sessionId],
      'still accounted for',
    );
  });

  test("an end announced again after the client came back on the same address stops nothing, not the client's new session", async () => {
    const { ctx } = portal.portal;
    const first = minutesAgo(10);
    const ended = (at: Date, startedAt: Date): PortalEvent => ({
      type: 'session.ended',
      at,
      connectionId: 'cn-repeated',
      vpnProto: 'openvpn',
      nodeNumber: asNodeNumber(0),
      bytesIn: 1,
      bytesOut: 1,
      cause: 'disconnected',
      session: {
        userId: 'erin',
        profileId: 'employees',
        ipFour: '10.45.0.3',
        ipSix: 'fd45::3',
        originatingIp: null,
        connectedAt: formatAtom(startedAt),
      },
    });
    // The first connection's end is announced, the client connects again on its address a
    // second later, and the same end is announced once more (a node's report repeated, or
    // another portal instance that ended it too).
    await ctx.events.record(ctx.db, openVpnStart('cn-repeated', first));
    await ctx.events.record(ctx.db, ended(new Date(first.getTime() + 60_000), first));
    const again = new Date(first.getTime() + 61_000);
    await ctx.events.record(ctx.db, openVpnStart('cn-repeated', again));
    await ctx.events.record(ctx.db, ended(new Date(first.getTime() + 62_000), first));
    const [start, stop, next, ...more] = await queued('cn-repeated');
    assert.deepEqual([start?.statusType, stop?.statusType, next?.statusType], ['Start', 'Stop', 'Start']);
    assert.equal(stop?.sessionId, start?.sessionId);
    assert.deepEqual(
      more.map((record) => record.statusType),
      [],
      'the new session, still connected, is not stopped',
    );
    // Its own end stops it.
    await ctx.events.record(ctx.db, ended(new Date(first.getTime() + 121_000), again));
    const last = (await queued('cn-repeated')).at(-1);
    assert.deepEqual([last?.statusType, last?.sessionId, last?.sessionTime], ['Stop', next?.sessionId, 60]);
  });

  test('a peer that vanished from its node after a pass saw its counters stops with those counters, not with nothing', async () => {
    const { ctx } = portal.portal;
    const at = minutesAgo(30);
    const peer = 'wg-vanished-peer';
    await ctx.events.record(ctx.db, {
      type: 'session.started',
      at,
      configuration: {
        userId: asUserId('erin'),
        profileId: asProfileId('employees'),
        connectionId: peer,
        vpnProto: 'wireguard',
        nodeNumber: asNodeNumber(0),
      },
      ipFour: '10.45.0.3',
      ipSix: 'fd45::3',
      originatingIp: '2001:db8:77::5',
    });
    // A pass read the node's counters of the peer (over 4 GiB received); its Interim-Updates carry them.
    const observed = { bytesIn: 5_000_000_000, bytesOut: 7_000 };
    await noteSessionCounters(ctx.db, ctx.config, asNodeNumber(0), new Map([[peer, observed]]));
    // The next pass found the peer gone from the node (a node that lost its peers): no counters.
    await ctx.events.record(ctx.db, {
      type: 'session.ended',
      at: minutesAgo(5),
      connectionId: peer,
      vpnProto: 'wireguard',
      nodeNumber: asNodeNumber(0),
      bytesIn: 0,
      bytesOut: 0,
      cause: 'lost',
      session: {
        userId: 'erin',
        profileId: 'employees',
        ipFour: '10.45.0.3',
        ipSix: 'fd45::3',
        originatingIp: '2001:db8:77::5',
        connectedAt: formatAtom(at),
      },
    });
    const [start, stop, ...more] = await queued(peer);
    assert.deepEqual([start?.statusType, stop?.statusType, more.length], ['Start', 'Stop', 0]);
    assert.equal(stop?.terminateCause, 'Lost-Service');
    assert.deepEqual(
      [stop?.inputOctets, stop?.outputOctets],
      [observed.bytesIn, observed.bytesOut],
      "the session's traffic as last observed, which the server would otherwise overwrite with 0",
    );
  });
});
