// The retention pass of the daily housekeeping, driven by the portal's clock (a test double):
// each kind of record goes after its own retention (history rows, the client's own address in
// them, audit rows), one audit row per pass says how many went and how many a legal hold kept,
// and a held user's records outlive their retention until the hold is released or expires,
// then go at the next pass.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { insertOutboxRecords } from '../../../src/storage/radius-outbox.js';
import { insertRadiusSession } from '../../../src/storage/radius-sessions.js';
import { auditLog, ManualClock } from '../../support/admin-keys.js';
import {
  openVpnConfiguration,
  openVpnEmployees,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../../support/openvpn-sessions.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { refuseWrites } from '../../support/refusing-trigger.js';

const DAY = 86_400_000;

/** A closed session of `userId` on the first day, from a client address of its own. */
async function session(portal: TestPortal, userId: string, connectionId: string, from: string): Promise<void> {
  const db = portal.portal.ctx.db;
  const nodeNumber = asNodeNumber(0);
  await openConnection(db, {
    userId: asUserId(userId),
    profileId: asProfileId('employees'),
    vpnProto: 'openvpn',
    connectionId,
    nodeNumber,
    ipFour: '10.44.0.9',
    ipSix: 'fd44::9',
    originatingIp: from,
    connectedAt: new Date('2026-01-10T09:00:00Z'),
  });
  await closeConnection(db, {
    connectionId,
    nodeNumber,
    disconnectedAt: new Date('2026-01-10T10:00:00Z'),
    bytesIn: 1,
    bytesOut: 2,
  });
}

/** Who is in the history, with the client address each row still has. */
async function history(portal: TestPortal): Promise<string[]> {
  const { connection_log } = await portal.admin.connectionLog({});
  return connection_log.map((entry) => `${entry.user_id} ${entry.originating_ip ?? '-'}`).sort();
}

/** Runs the day's housekeeping and answers the parameters of the one audit row it wrote. */
async function pass(portal: TestPortal, clock: ManualClock, days: number): Promise<Record<string, string>> {
  clock.advance(days * DAY);
  const [newestBefore] = await auditLog(portal, 1);
  assert.notEqual(await runHousekeepingIfDue(portal.portal.ctx), null, 'the pass ran');
  const rows = (await auditLog(portal)).filter((row) => row.auditId > (newestBefore?.auditId ?? ''));
  assert.deepEqual(
    rows.map((written) => written.call),
    ['housekeeping'],
    'one audit row per pass',
  );
  const [row] = rows;
  assert.ok(row !== undefined);
  assert.deepEqual([row.keyName, row.userId, row.status], ['(portal)', null, 200]);
  return { ...row.parameters };
}

/** The counts of a row for the kinds named (removed, held). */
function counts(parameters: Record<string, string>, ...kinds: string[]): Record<string, [string, string]> {
  return Object.fromEntries(
    kinds.map((kind) => [kind, [parameters[kind] ?? '?', parameters[`${kind}_held`] ?? '?']] as const),
  );
}

const KINDS = [
  'connection_log',
  'originating_ip',
  'nat_mappings',
  'accounting_outbox',
  'webhook_deliveries',
  'audit_log',
  'revocations',
  'legal_holds',
];

test("each kind goes after its own retention, a held user's records stay until the hold is released or expires, and each pass writes one audit row with the counts", async (t) => {
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const portal = await startTestPortal({
    clock,
    config: { connectionLogRetention: 'P30D', originatingIpRetention: 'P7D', auditLogRetention: 'P60D' },
  });
  t.after(() => portal.close());
  await portal.reconcile(); // the start-up pass (and its housekeeping) is done before the clock moves

  // Day one: alice and bob get a configuration, carol a device; each has a session from an address.
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  const device = await portal.admin.registerDevice({
    user_id: 'carol',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'S-carol',
  });
  await session(portal, 'alice', 'a1', '192.0.2.10');
  await session(portal, 'bob', 'b1', '192.0.2.20');
  await session(portal, 'carol', 'c1', '192.0.2.30');
  // alice is held until spring; carol's device until the 25th.
  const aliceHold = await portal.admin.createLegalHold({
    user_id: 'alice',
    reason: 'CSIRT case 2026-017',
    until: '2026-04-01T00:00:00Z',
  });
  const carolHold = await portal.admin.createLegalHold({
    device_id: device.device_id,
    reason: 'order 4711',
    until: '2026-01-25T00:00:00Z',
  });
  assert.equal(carolHold.user_id, 'carol', "a device hold keeps its user's records");

  // Ten days on (01-20): only bob's address is older than 7 days and not held.
  const tenth = await pass(portal, clock, 10);
  assert.deepEqual(counts(tenth, ...KINDS), {
    connection_log: ['0', '0'],
    originating_ip: ['1', '2'],
    nat_mappings: ['0', '0'],
    accounting_outbox: ['0', '0'],
    webhook_deliveries: ['0', '0'],
    audit_log: ['0', '0'],
    revocations: ['0', '0'],
    legal_holds: ['0', '0'],
  });
  assert.equal(tenth['held_users'], '2');
  assert.deepEqual(await history(portal), ['alice 192.0.2.10', 'bob -', 'carol 192.0.2.30']);

  // 02-15: carol's hold expired on 01-25, so her row goes with bob's; alice's stays, address and all.
  const thirtySixth = await pass(portal, clock, 26);
  assert.deepEqual(counts(thirtySixth, 'connection_log', 'originating_ip', 'audit_log'), {
    connection_log: ['2', '1'],
    originating_ip: ['0', '1'],
    audit_log: ['0', '0'],
  });
  assert.equal(thirtySixth['held_users'], '1');
  assert.deepEqual(await history(portal), ['alice 192.0.2.10']);

  // 03-15: day one's audit rows are older than 60 days; alice's (her create, her hold) are kept.
  const sixtyFourth = await pass(portal, clock, 28);
  assert.deepEqual(counts(sixtyFourth, 'connection_log', 'audit_log'), {
    connection_log: ['0', '1'],
    audit_log: ['3', '2'],
  });
  const aliceRows = async () => (await auditLog(portal)).filter((row) => row.userId === 'alice').map((row) => row.call);
  assert.deepEqual(await aliceRows(), ['create_legal_hold', 'create']);
  assert.equal(
    (await auditLog(portal)).some((row) => row.userId === 'bob' || row.userId === 'carol'),
    false,
    "bob's create, carol's device and the hold on it are gone",
  );

  // Released: the next pass removes what of alice's is past its retention.
  const released = await portal.admin.releaseLegalHold(aliceHold.hold_id);
  assert.equal(released.state, 'released');
  const sixtyFifth = await pass(portal, clock, 1);
  assert.deepEqual(counts(sixtyFifth, 'connection_log', 'originating_ip', 'audit_log'), {
    connection_log: ['1', '0'],
    originating_ip: ['0', '0'],
    audit_log: ['2', '0'],
  });
  assert.equal(sixtyFifth['held_users'], '0');
  assert.deepEqual(await history(portal), []);
  assert.deepEqual(await aliceRows(), ['release_legal_hold'], 'only the release is left, newer than 60 days');

  // Both holds stay listed (released, expired) until they are as old as the audit log keeps.
  assert.deepEqual(
    (await portal.admin.legalHolds()).map((hold) => [hold.user_id, hold.state]),
    [
      ['carol', 'expired'],
      ['alice', 'released'],
    ],
  );
  const later = await pass(portal, clock, 61);
  assert.equal(later['legal_holds'], '2', 'ended holds go after auditLogRetention');
  assert.deepEqual(await portal.admin.legalHolds(), []);
});

test('a pass with nothing to remove and nothing held writes no audit row', async (t) => {
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  await portal.reconcile();
  clock.advance(DAY);
  const result = await runHousekeepingIfDue(portal.portal.ctx);
  assert.deepEqual(
    Object.values(result?.retention.kinds ?? {}).map((count) => [count.removed, count.held]),
    KINDS.map(() => [0, 0]),
  );
  assert.deepEqual(
    (await auditLog(portal)).filter((row) => row.call === 'housekeeping'),
    [],
  );
});

test('RADIUS records nobody sends any more (accounting turned off since) go once older than accounting.radius.maxAge', async (t) => {
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  await portal.reconcile();
  const db = portal.portal.ctx.db;
  // Left behind by a portal that had accounting.radius: one record of day one, one of day two.
  const record = (recordId: string, eventAt: string) => ({
    recordId,
    server: '192.0.2.1:1813',
    acctSessionId: `session-${recordId}`,
    connectionId: 'a1',
    address: null,
    record: '{}',
    eventAt,
  });
  await insertOutboxRecords(db, [record('r1', '2026-01-10T12:00:00+00:00'), record('r2', '2026-01-11T11:00:00+00:00')]);

  const parameters = await pass(portal, clock, 1.5); // 01-12 00:00: only r1 is older than P1D
  assert.deepEqual(counts(parameters, 'accounting_outbox'), { accounting_outbox: ['1', '0'] });
  const left = await db.selectFrom('radius_outbox').select('record_id').execute();
  assert.deepEqual(
    left.map((row) => row.record_id),
    ['r2'],
  );
});

test('a RADIUS session row whose session ended while accounting was off goes once older than accounting.radius.maxAge', async (t) => {
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  await portal.reconcile();
  const db = portal.portal.ctx.db;
  const nodeNumber = asNodeNumber(0);
  // Three sessions began while accounting.radius was on, each with its row (its Start was sent);
  // then accounting was turned off, so no Stop took the rows of those that ended since.
  const ends: Record<string, string | null> = {
    ended: '2026-01-10T10:00:00Z',
    open: null,
    'ended-lately': '2026-01-11T06:00:00Z',
  };
  for (const [connectionId, end] of Object.entries(ends)) {
    await openConnection(db, {
      userId: asUserId(`user-${connectionId}`),
      profileId: asProfileId('employees'),
      vpnProto: 'openvpn',
      connectionId,
      nodeNumber,
      ipFour: '10.44.0.9',
      ipSix: 'fd44::9',
      originatingIp: '198.51.100.7',
      connectedAt: new Date('2026-01-10T09:00:00Z'),
    });
    if (end !== null)
      await closeConnection(db, { connectionId, nodeNumber, disconnectedAt: new Date(end), bytesIn: 1, bytesOut: 2 });
    await insertRadiusSession(db, {
      acctSessionId: `acct-${connectionId}`,
      connectionId,
      nodeNumber,
      startRecord: '{"userName":"someone","callingStationId":"198.51.100.7"}',
      startedAt: '2026-01-10T09:00:00+00:00',
      nextInterimAt: '2026-01-10T09:10:00+00:00',
    });
  }

  clock.advance(1.5 * DAY); // 01-12 00:00: only "ended" ended more than P1D ago
  const result = await runHousekeepingIfDue(portal.portal.ctx);
  const left = await db.selectFrom('radius_sessions').select('connection_id').orderBy('connection_id').execute();
  assert.deepEqual(
    left.map((row) => row.connection_id),
    ['ended-lately', 'open'],
    'the row of the session that ended is gone; those of the open one and the one that ended within maxAge stay',
  );
  assert.deepEqual(result?.retention.kinds['accounting_outbox'], { removed: 1, held: 0 });
});

test("a month's retention at a month's end keeps what ended less than a month ago: on 31 March a session that ended on 2 March stays", async (t) => {
  const clock = new ManualClock('2026-03-30T12:00:00Z');
  const portal = await startTestPortal({ clock, config: { connectionLogRetention: 'P1M' } });
  t.after(() => portal.close());
  await portal.reconcile(); // the start-up pass (and its housekeeping) is done before the clock moves
  const db = portal.portal.ctx.db;
  const nodeNumber = asNodeNumber(0);
  const ended = async (connectionId: string, at: string) => {
    await openConnection(db, {
      userId: asUserId('alice'),
      profileId: asProfileId('employees'),
      vpnProto: 'openvpn',
      connectionId,
      nodeNumber,
      ipFour: '10.44.0.9',
      ipSix: 'fd44::9',
      originatingIp: null,
      connectedAt: new Date(Date.parse(at) - 3_600_000),
    });
    await closeConnection(db, { connectionId, nodeNumber, disconnectedAt: new Date(at), bytesIn: 1, bytesOut: 2 });
  };
  // A month after 27 February is 27 March, past; a month after 2 March is 2 April, to come.
  await ended('february', '2026-02-27T12:00:00Z');
  await ended('march', '2026-03-02T12:00:00Z');

  const parameters = await pass(portal, clock, 1); // 31 March, 12:00
  assert.deepEqual(counts(parameters, 'connection_log'), { connection_log: ['1', '0'] });
  const { connection_log } = await portal.admin.connectionLog({});
  assert.deepEqual(
    connection_log.map((entry) => entry.connection_id),
    ['march'],
  );
});

test("a held user's client address stays when the session closes, though Log.originatingIp (off) blanks everyone else's then", async (t) => {
  const portal = await startTestPortal({ config: { ...openVpnEmployees, Log: { originatingIp: false } } });
  t.after(() => portal.close());
  const alice = await openVpnConfiguration(portal, 'alice');
  const bob = await openVpnConfiguration(portal, 'bob');
  await portal.admin.createLegalHold({
    user_id: 'alice',
    reason: 'CSIRT case 2026-042: stolen account',
    until: new Date(Date.now() + 30 * DAY).toISOString(),
  });
  await reportOpenVpnConnect(portal, alice, { originating_ip: '198.51.100.7', ip_four: '10.60.0.2' });
  await reportOpenVpnConnect(portal, bob, { originating_ip: '198.51.100.8', ip_four: '10.60.0.3' });
  await reportOpenVpnDisconnect(portal, alice, { ip_four: '10.60.0.2' });
  await reportOpenVpnDisconnect(portal, bob, { ip_four: '10.60.0.3' });
  const { connection_log } = await portal.admin.connectionLog({});
  assert.deepEqual(
    connection_log.map((entry) => [entry.user_id, entry.originating_ip, entry.disconnected_at === null]).sort(),
    [
      ['alice', '198.51.100.7', false],
      ['bob', null, false],
    ],
    "the hold keeps alice's address, as it keeps her history; bob's goes with his session",
  );
});

test('a pass that fails at one kind still writes its audit row: what the kinds before it removed, and where it failed', async (t) => {
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const portal = await startTestPortal({
    clock,
    config: { connectionLogRetention: 'P30D', auditLogRetention: 'P60D' },
  });
  t.after(() => portal.close());
  await portal.reconcile(); // the start-up pass (and its housekeeping) is done before the clock moves
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' }); // an audit row of day one
  await session(portal, 'bob', 'b1', '192.0.2.20');
  // The database refuses to delete audit rows (a real failure of the statement, as a timeout or
  // a lost connection would be), after the session history's kind has deleted bob's row.
  const db = portal.portal.ctx.db;
  await refuseWrites(db, 'refuse_audit_delete', 'DELETE', 'audit_log', 'audit rows are not deleted today');

  clock.advance(61 * DAY);
  await assert.rejects(runHousekeepingIfDue(portal.portal.ctx), /audit rows are not deleted today/);
  const [row] = (await auditLog(portal)).filter((entry) => entry.call === 'housekeeping');
  assert.ok(row !== undefined, 'the deletions before the failure are in the audit log');
  assert.deepEqual(
    [row.status, row.parameters['connection_log'], row.parameters['audit_log']],
    [500, '1', undefined],
    "bob's session went; the audit log's kind did not finish",
  );
  assert.match(row.detail ?? '', /^stopped at audit_log: .*audit rows are not deleted today/);
  assert.deepEqual(await history(portal), [], "bob's session is gone");
});
