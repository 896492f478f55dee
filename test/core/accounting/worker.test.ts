// RADIUS accounting end to end inside the portal, against a real FreeRADIUS: a session's Start,
// Interim-Update and Stop reach the server with the session's attributes (a long user id cut to
// RADIUS's 253 octets); while the server is away records wait in the outbox and arrive, with
// their Acct-Delay-Time, once it is back; two portal instances on one database send each record
// once; an end announced twice stops only its own session; a record unanswered for maxAge is dropped with an audit row and a metric.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { formatAtom } from '../../../src/shared/time.js';
import { countOutboxRecords } from '../../../src/storage/radius-outbox.js';
import { detailRecord, startFreeRadius, type FreeRadius } from '../../support/freeradius.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

describe('RADIUS accounting through the outbox', () => {
  let radius: FreeRadius;
  let folder: string;
  let portal: TestPortal;
  let second: TestPortal;
  const clock = shiftedClock();
  let serverAddress: string;

  const announce = async (target: TestPortal, ...events: PortalEvent[]): Promise<void> => {
    const { ctx } = target.portal;
    await ctx.events.change(ctx.db, async (_trx, record) => record(...events));
  };
  const started = (connectionId: string, userId: string, at: Date): PortalEvent => ({
    type: 'session.started',
    at,
    configuration: {
      userId: asUserId(userId),
      profileId: asProfileId('employees'),
      connectionId,
      vpnProto: 'wireguard',
      nodeNumber: asNodeNumber(0),
    },
    ipFour: '10.44.0.7',
    ipSix: 'fd44::7',
    originatingIp: '203.0.113.9',
  });
  const ended = (connectionId: string, at: Date): PortalEvent => ({
    type: 'session.ended',
    at,
    connectionId,
    vpnProto: 'wireguard',
    nodeNumber: asNodeNumber(0),
    bytesIn: 6_000_000_000,
    bytesOut: 4_000,
    cause: 'idle',
    session: null,
  });
  const outboxSize = async (): Promise<number> =>
    [...(await countOutboxRecords(portal.portal.ctx.db)).values()].reduce((sum, count) => sum + count, 0);
  const ofSession = async (userId: string) =>
    (await radius.records()).filter((record) => record['User-Name'] === userId);

  before(async () => {
    radius = await startFreeRadius();
    folder = await mkdtemp(join(tmpdir(), 'radius-secret-'));
    const secretFile = join(folder, 'radius.secret');
    await writeFile(secretFile, `${radius.secret}\n`, { mode: 0o600 });
    serverAddress = `${radius.host}:${radius.port}`;
    const config = {
      accounting: {
        radius: {
          servers: [{ address: serverAddress, secretFile, nasIdentifier: 'portal-test' }],
          interimInterval: 'PT1M',
          maxAge: 'PT1H',
        },
      },
    };
    portal = await startTestPortal({ config, clock });
    second = await startTestPortal({ config, clock, database: portal.database });
  });

  after(async () => {
    await second?.close();
    await portal?.close();
    await radius?.close();
    await rm(folder, { recursive: true, force: true });
  });

  test('a session is reported as Start, Interim-Update and Stop, each once although two instances send', async () => {
    const at = new Date(clock.now().getTime() - 5_000);
    await announce(portal, started('key-alice', 'alice', at));
    const start = await detailRecord(radius, 'the Start', (record) => record['User-Name'] === 'alice');
    assert.equal(start['Acct-Status-Type'], 'Start');
    assert.match(start['Acct-Session-Id'] ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    assert.equal(start['Framed-IP-Address'], '10.44.0.7');
    assert.equal(start['Framed-IPv6-Address'], 'fd44::7');
    assert.equal(start['Calling-Station-Id'], '203.0.113.9');
    assert.equal(start['NAS-Identifier'], 'portal-test');
    assert.equal(start['NAS-IP-Address'], '127.0.0.1', "the host of the node's URL");
    assert.equal(start['Class'], '0x656d706c6f79656573', 'the profile id');
    assert.ok(Number(start['Acct-Delay-Time']) >= 5, 'sent seconds after the handshake');

    clock.advance(61_000);
    const interim = await detailRecord(
      radius,
      'the Interim-Update',
      (record) => record['User-Name'] === 'alice' && record['Acct-Status-Type'] === 'Interim-Update',
    );
    assert.equal(interim['Acct-Session-Id'], start['Acct-Session-Id']);
    assert.ok(Number(interim['Acct-Session-Time']) >= 61);

    await announce(second, ended('key-alice', clock.now()));
    const stop = await detailRecord(
      radius,
      'the Stop',
      (record) => record['User-Name'] === 'alice' && record['Acct-Status-Type'] === 'Stop',
    );
    assert.equal(stop['Acct-Session-Id'], start['Acct-Session-Id'], 'the same session id from the other instance');
    assert.equal(stop['Acct-Terminate-Cause'], 'Idle-Timeout');
    assert.equal(stop['Acct-Input-Gigawords'], '1');
    assert.equal(stop['Acct-Input-Octets'], String(6_000_000_000 - 2 ** 32));
    assert.equal(stop['Acct-Output-Octets'], '4000');
    await until('the outbox to empty', async () => (await outboxSize()) === 0);
    assert.deepEqual(
      (await ofSession('alice')).map((record) => record['Acct-Status-Type']),
      ['Start', 'Interim-Update', 'Stop'],
      'each record once',
    );
    await second.close();
  });

  test('a user id over 253 octets reaches the server cut at a character boundary, the same in Start and Stop', async () => {
    // 64 four-octet characters: 256 octets, a user id the Admin API and SCIM take.
    const userId = '😀'.repeat(64);
    const cut = '😀'.repeat(63);
    await announce(portal, started('key-long', userId, clock.now()));
    const start = await detailRecord(radius, 'the Start of the long user id', (record) => record['User-Name'] === cut);
    assert.equal(start['Acct-Status-Type'], 'Start');
    await announce(portal, ended('key-long', clock.now()));
    const stop = await detailRecord(
      radius,
      'the Stop of the long user id',
      (record) => record['User-Name'] === cut && record['Acct-Status-Type'] === 'Stop',
    );
    assert.equal(stop['Acct-Session-Id'], start['Acct-Session-Id']);
    await until('the outbox to empty', async () => (await outboxSize()) === 0);
  });

  test('while the server is away the Stop waits in the outbox and arrives once it is back, with its delay', async () => {
    await announce(portal, started('key-bob', 'bob', clock.now()));
    await detailRecord(radius, "bob's Start", (record) => record['User-Name'] === 'bob');
    await radius.stop();
    await announce(portal, ended('key-bob', clock.now()));
    await until(
      'a retransmission to be counted',
      async () => (portal.portal.radiusAccounting?.counts.retried.get(serverAddress) ?? 0) > 0,
      30_000,
    );
    assert.equal(await outboxSize(), 1, 'the Stop waits');
    const waiting = await (await fetch(portal.portal.metricsUrl ?? '')).text();
    assert.match(waiting, new RegExp(`vpn_portal_radius_accounting_outbox\\{server="${serverAddress}"\\} 1\n`));
    assert.match(
      waiting,
      new RegExp(`vpn_portal_radius_accounting_retried_total\\{server="${serverAddress}"\\} [1-9]`),
    );
    await radius.start();
    const stop = await detailRecord(
      radius,
      "bob's Stop",
      (record) => record['User-Name'] === 'bob' && record['Acct-Status-Type'] === 'Stop',
      90_000,
    );
    assert.ok(Number(stop['Acct-Delay-Time']) >= 5, `sent late, and says so: ${stop['Acct-Delay-Time']}`);
    await until('the outbox to empty', async () => (await outboxSize()) === 0);
  });

  test("a Start still waiting to be sent again holds back its session's Stop, so the server never hears them the other way round", async () => {
    const { ctx } = portal.portal;
    const at = clock.now();
    await ctx.events.change(ctx.db, async (trx, record) => {
      await record(started('key-dave', 'dave', at), ended('key-dave', new Date(at.getTime() + 1_000)));
      // The Start went unanswered three times (a packet lost, a server busy): its next
      // transmission is 30 s away, while the Stop is due at once.
      await trx
        .updateTable('radius_outbox')
        .set({ attempts: 3, next_attempt_at: formatAtom(new Date(at.getTime() + 30_000)) })
        .where('connection_id', '=', 'key-dave')
        .where('event_at', '=', formatAtom(at))
        .execute();
    });
    // Long enough for a Stop due at once to reach the server.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    clock.advance(31_000);
    await until('the outbox to empty', async () => (await outboxSize()) === 0, 30_000);
    assert.deepEqual(
      (await ofSession('dave')).map((record) => record['Acct-Status-Type']),
      ['Start', 'Stop'],
      'a Start after its Stop would tell a firewall dave is behind 10.44.0.7 again',
    );
  });

  test("the next session's Start on an address waits for the Stop of the session that had it, so the server never leaves the address to the wrong user", async () => {
    const { ctx } = portal.portal;
    // Ten seconds ago: every record below is due at once when queued.
    const at = new Date(clock.now().getTime() - 10_000);
    const erinsStopDue = formatAtom(new Date(clock.now().getTime() + 30_000));
    await announce(portal, started('key-erin', 'erin', at));
    await detailRecord(radius, "erin's Start", (record) => record['User-Name'] === 'erin');
    await ctx.events.change(ctx.db, async (trx, record) => {
      // erin leaves 10.44.0.7 and frank gets it.
      await record(
        ended('key-erin', new Date(at.getTime() + 1_000)),
        started('key-frank', 'frank', new Date(at.getTime() + 2_000)),
      );
      // erin's Stop went unanswered three times: its next transmission is 30 s away, while
      // frank's Start is due at once.
      await trx
        .updateTable('radius_outbox')
        .set({ attempts: 3, next_attempt_at: erinsStopDue })
        .where('connection_id', '=', 'key-erin')
        .execute();
    });
    // frank's Start waits for the next transmission of erin's Stop, without counting an attempt,
    // and is not looked at every few seconds meanwhile (a backlog behind a server that is away
    // would be read over and over).
    const frankWaits = async () =>
      (
        await ctx.db
          .selectFrom('radius_outbox')
          .select(['next_attempt_at', 'attempts'])
          .where('connection_id', '=', 'key-frank')
          .executeTakeFirst()
      )?.next_attempt_at === erinsStopDue;
    await until("frank's Start waiting for erin's Stop", frankWaits, 10_000);
    const [frank] = await ctx.db
      .selectFrom('radius_outbox')
      .select('attempts')
      .where('connection_id', '=', 'key-frank')
      .execute();
    assert.equal(Number(frank?.attempts), 0, 'the wait is no attempt');
    clock.advance(31_000);
    await until('the outbox to empty', async () => (await outboxSize()) === 0, 30_000);
    assert.deepEqual(
      (await radius.records())
        .filter((record) => record['User-Name'] === 'erin' || record['User-Name'] === 'frank')
        .map((record) => `${record['User-Name']} ${record['Acct-Status-Type']}`),
      ['erin Start', 'erin Stop', 'frank Start'],
      "frank's Start before erin's Stop: a firewall that ends erin's mapping of 10.44.0.7 with her Stop leaves frank unmapped, or one keyed by user leaves erin behind it",
    );
    await announce(portal, ended('key-frank', clock.now()));
    await until('the outbox to empty', async () => (await outboxSize()) === 0, 30_000);
  });

  test('an end announced twice, the second time after the client came back on its address, sends one Stop: the server never hears the new session stop while it runs', async () => {
    const at = new Date(Math.floor(clock.now().getTime() / 1000) * 1000);
    const endOf = (startedAt: Date, endedAt: Date): PortalEvent => ({
      type: 'session.ended',
      at: endedAt,
      connectionId: 'key-gus',
      vpnProto: 'wireguard',
      nodeNumber: asNodeNumber(0),
      bytesIn: 1,
      bytesOut: 1,
      cause: 'lost',
      session: {
        userId: 'gus',
        profileId: 'employees',
        ipFour: '10.44.0.7',
        ipSix: 'fd44::7',
        originatingIp: '203.0.113.9',
        connectedAt: formatAtom(startedAt),
      },
    });
    const again = new Date(at.getTime() + 2_000);
    await announce(portal, started('key-gus', 'gus', at));
    await announce(portal, endOf(at, new Date(at.getTime() + 1_000)));
    await announce(portal, started('key-gus', 'gus', again));
    // The first session's end again: a repeated report, or another instance that ended it too.
    await announce(portal, endOf(at, new Date(at.getTime() + 3_000)));
    await until('the outbox to empty', async () => (await outboxSize()) === 0, 30_000);
    const sent = async () =>
      (await ofSession('gus')).map((record) => `${record['Acct-Status-Type']} ${record['Acct-Session-Id']}`);
    const [first, stop, next, ...more] = await sent();
    assert.equal(stop, first?.replace('Start', 'Stop'), 'the first session stopped');
    assert.match(next ?? '', /^Start /);
    assert.deepEqual(more, [], 'and nothing else: the new session is still running');

    await announce(portal, endOf(again, new Date(at.getTime() + 4_000)));
    await detailRecord(
      radius,
      "the new session's Stop",
      (record) =>
        record['User-Name'] === 'gus' &&
        record['Acct-Status-Type'] === 'Stop' &&
        `Start ${record['Acct-Session-Id']}` === next,
    );
    await until('the outbox to empty', async () => (await outboxSize()) === 0, 30_000);
  });

  test('a record unanswered for maxAge is dropped with an audit row and a metric', async () => {
    await radius.stop();
    try {
      await announce(portal, started('key-carol', 'carol', clock.now()));
      await until(
        'an attempt at the Start',
        async () => (portal.portal.radiusAccounting?.counts.retried.get(serverAddress) ?? 0) > 1,
        30_000,
      );
      clock.advance(3_600_000 + 120_000);
      let dropped: { parameters: Record<string, string>; detail: string | null } | undefined;
      await until(
        'the audit row of the dropped Start',
        async () => {
          const { audit_log: rows } = await portal.admin.auditLog({ user_id: 'carol' });
          dropped = rows.find((row) => row.call === 'radius_accounting_dropped');
          return dropped !== undefined;
        },
        90_000,
      );
      assert.equal(dropped?.parameters['acct_status_type'], 'Start');
      assert.equal(dropped?.parameters['server'], serverAddress);
      assert.match(dropped?.detail ?? '', /maxAge \(PT1H\)/);
      const metrics = await (await fetch(portal.portal.metricsUrl ?? '')).text();
      assert.match(metrics, new RegExp(`vpn_portal_radius_accounting_dropped_total\\{server="${serverAddress}"\\} 1`));
      assert.match(metrics, /vpn_portal_radius_accounting_sent_total\{server="[^"]+"\} [1-9]/);
    } finally {
      await radius.start();
    }
  });
});
