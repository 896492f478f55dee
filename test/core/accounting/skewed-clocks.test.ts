// Two portal instances on one database whose clocks disagree: the outbox orders a session's
// records by ids made from each instance's own clock, so an Interim-Update queued by an instance
// whose clock runs ahead can sort after the Stop another instance queued later. Sent in that
// order, the server would hear of the session again after its end (a firewall may reopen it). An
// Interim-Update of a session whose Stop is queued is dropped instead: the Stop has the final
// counters. Both instances run in this one test process, whose id maker never goes back: where
// the story needs the ids the instance on time's own process would make, it gives them by hand.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import type { Db } from '../../../src/storage/database.js';
import type { Clock } from '../../../src/shared/time.js';
import { timeOrderedId } from '../../../src/shared/time-ordered-id.js';
import { capturedLog } from '../../support/captured-log.js';
import { detailRecord, startFreeRadius } from '../../support/freeradius.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { metricsText, startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

/** The id timeOrderedId makes at `at` in a process that made none later. */
function idOfAnotherProcess(at: Date): string {
  const time = at.getTime().toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7000-${randomUUID().slice(19)}`;
}

/**
 * Gives the record of `statusType` queued in the transaction `trx` the id the process of the
 * instance that queued it would make at `at`, with a clock of its own: the one id maker of this
 * process is shared by both instances, and may have run ahead of either's clock.
 */
async function giveIdOfItsProcess(trx: Db, statusType: string, at: Date): Promise<void> {
  await trx
    .updateTable('radius_outbox')
    .set({ record_id: idOfAnotherProcess(at) })
    .where('record', 'like', `%"statusType":"${statusType}"%`)
    .execute();
}

/** How far the second instance's clock runs ahead. */
const AHEAD_MS = 30_000;

/** FreeRADIUS, and two portal instances on one database accounting to it, one with a clock ahead. */
async function twoInstances(t: TestContext) {
  const radius = await startFreeRadius();
  t.after(() => radius.close());
  const folder = await mkdtemp(join(tmpdir(), 'radius-secret-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const secretFile = join(folder, 'radius.secret');
  await writeFile(secretFile, `${radius.secret}\n`, { mode: 0o600 });
  const server = `${radius.host}:${radius.port}`;
  const config = {
    accounting: { radius: { servers: [{ address: server, secretFile }], interimInterval: 'PT1M', maxAge: 'PT1H' } },
  };
  const clock = shiftedClock();
  const ahead: Clock = { now: () => new Date(clock.now().getTime() + AHEAD_MS) };
  const logs = [capturedLog('info'), capturedLog('info')] as const;
  const onTime = await startTestPortal({ config, clock, logger: logs[0].logger });
  t.after(() => onTime.close());
  const fast = await startTestPortal({ config, clock: ahead, database: onTime.database, logger: logs[1].logger });
  t.after(() => fast.close());
  const { ctx } = onTime.portal;
  const announce = (event: PortalEvent) => ctx.events.change(ctx.db, async (_trx, record) => record(event));
  /** The queued records' types, in the order of their ids. */
  const queued = async () =>
    (await ctx.db.selectFrom('radius_outbox').select(['record_id', 'record']).orderBy('record_id').execute()).map(
      (row) => (JSON.parse(row.record) as { statusType: string }).statusType,
    );
  return { radius, server, clock, logs, onTime, fast, ctx, announce, queued };
}

/** A WireGuard session of `userId`'s configuration on `ipFour`, begun at `at`. */
function started(userId: string, ipFour: string, at: Date): PortalEvent {
  return {
    type: 'session.started',
    at,
    configuration: {
      userId: asUserId(userId),
      profileId: asProfileId('employees'),
      connectionId: `key-${userId}`,
      vpnProto: 'wireguard',
      nodeNumber: asNodeNumber(0),
    },
    ipFour,
    ipSix: 'fd44::7',
    originatingIp: '203.0.113.9',
  };
}

/** The end of `userId`'s session at `at`, as an idle WireGuard session ends. */
function ended(userId: string, at: Date): PortalEvent {
  return {
    type: 'session.ended',
    at,
    connectionId: `key-${userId}`,
    vpnProto: 'wireguard',
    nodeNumber: asNodeNumber(0),
    bytesIn: 6_000,
    bytesOut: 4_000,
    cause: 'idle',
    session: null,
  };
}

test('an Interim-Update an instance with a clock ahead queued never reaches the server after the Stop another instance queued', async (t) => {
  const { radius, server, clock, logs, onTime, fast, ctx, queued } = await twoInstances(t);

  // This process's id maker ran ahead, as a test before this one leaves it whose portal ran on a
  // clock minutes ahead: it never goes back, so every id it makes later is dated past the clocks
  // of both instances. The instance ahead's interim gets such an id (later than its own process
  // would make it, and as that one after the Stop's); the instance on time's Start and Stop get
  // the ids of its own process by hand, or the Start would sort after the Stop.
  timeOrderedId(Date.now() + 2 * 60_000);
  // The server is away: the session's records wait in the outbox.
  await radius.stop();
  const startedAt = clock.now();
  await ctx.events.change(ctx.db, async (trx, record) => {
    await record(started('alice', '10.44.0.7', startedAt));
    await giveIdOfItsProcess(trx, 'Start', startedAt);
  });
  // 35 s on: the interim is due by the clock ahead (65 s) and not yet by the other (35 s).
  clock.advance(35_000);
  await until('the instance ahead to queue the Interim-Update', async () => (await queued()).length === 2, 10_000);
  // The session ends, reported to the instance on time. Its Stop's id is one from its own clock,
  // as its process makes it in a transaction that did not see the interim: here, in the one
  // process of both instances, the id maker counts on from the interim's id
  // (test/shared/time-ordered-id.test.ts), so the test gives the Stop the id the other process
  // would have (in the transaction that queued it: no worker saw another).
  const endedAt = clock.now();
  await ctx.events.change(ctx.db, async (trx, record) => {
    await record(ended('alice', endedAt));
    await giveIdOfItsProcess(trx, 'Stop', endedAt);
  });
  assert.deepEqual(await queued(), ['Start', 'Stop', 'Interim-Update'], 'the ids sort the Stop before the interim');

  await radius.start();
  await detailRecord(
    radius,
    'the Stop',
    (record) => record['User-Name'] === 'alice' && record['Acct-Status-Type'] === 'Stop',
    60_000,
  );
  await until('the outbox to empty', async () => (await queued()).length === 0, 60_000);
  assert.deepEqual(
    (await radius.records())
      .filter((record) => record['User-Name'] === 'alice')
      .map((record) => record['Acct-Status-Type']),
    ['Start', 'Stop'],
    'nothing of the session after its Stop',
  );
  // Dropped by whichever instance claimed it, counted and logged, with no audit row (nothing
  // went missing: the Stop has the final counters).
  const supersededBy = (portal: TestPortal): number =>
    portal.portal.radiusAccounting?.counts.superseded.get(server) ?? 0;
  assert.equal(supersededBy(onTime) + supersededBy(fast), 1);
  const [claimer, log] = supersededBy(onTime) === 1 ? [onTime, logs[0]] : [fast, logs[1]];
  assert.match(
    await metricsText(claimer),
    new RegExp(`vpn_portal_radius_accounting_superseded_total\\{server="${server}"\\} 1\n`),
  );
  const logged = log.lines().filter((line) => line.msg === 'Interim-Update of a stopped session dropped');
  assert.equal(logged.length, 1, log.text());
  assert.equal(logged[0]?.level, 30, 'at info');
  const audit = await onTime.admin.auditLog({ user_id: 'alice' });
  assert.deepEqual(
    audit.audit_log.filter((row) => row.call === 'radius_accounting_dropped'),
    [],
    'a superseded interim is no record lost',
  );
});

test("the next session's Start on an address reaches the server after the Stop of the one before, though the instance that queued that Stop runs ahead", async (t) => {
  const { radius, clock, ctx, announce, queued } = await twoInstances(t);
  const ofAddress = async () =>
    (await radius.records())
      .filter((record) => record['Framed-IP-Address'] === '10.44.0.7')
      .map((record) => `${record['Acct-Status-Type']} ${record['User-Name']}`);

  // The server is away: every record waits in the outbox.
  await radius.stop();
  await announce(started('alice', '10.44.0.7', clock.now()));
  clock.advance(5_000);
  // alice's session ends, reported to the instance 30 s ahead: its Stop carries an id of that
  // instance's clock, 30 s past the ids the instance on time makes (given here as its own process
  // would make it, in the transaction that queued it).
  const ours = await ctx.db.selectFrom('radius_outbox').select('record_id').executeTakeFirstOrThrow();
  const theirs = new Date(Number.parseInt(ours.record_id.replaceAll('-', '').slice(0, 12), 16) + 5_000 + AHEAD_MS);
  await ctx.events.change(ctx.db, async (trx, record) => {
    await record(ended('alice', clock.now()));
    await giveIdOfItsProcess(trx, 'Stop', theirs);
  });
  // A second later bob's new configuration has the address, and the instance on time reports his session.
  clock.advance(1_000);
  await announce(started('bob', '10.44.0.7', clock.now()));
  assert.deepEqual(await queued(), ['Start', 'Stop', 'Start'], "bob's Start is queued after alice's Stop");

  await radius.start();
  await until('the outbox to empty', async () => (await queued()).length === 0, 60_000);
  assert.deepEqual(
    await ofAddress(),
    ['Start alice', 'Stop alice', 'Start bob'],
    'a firewall mapping the address hears alice leave before bob comes, and keeps bob mapped',
  );
});
