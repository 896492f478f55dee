// Devices follow the MDM's compliance, against a local stand-in of Microsoft Graph (the real one
// cannot be reached from the tests) that pages its answers and names its fields as Graph does, and
// of a JSON list: a noncompliant device is suspended once (one history row, however many passes),
// resumed when compliant again, never resumed from a suspension made by hand; a grace period keeps
// the device until its end by the portal's clock (moved forward by the test); undetermined states
// are kept by default; a device that stopped checking in is suspended as stale; a pass that would
// suspend more than maxSuspendPerPass suspends none and says so once in the log and in the
// metrics (devices suspended already for another reason, which are suspended for compliance too,
// are not counted); a malformed JSON entry changes nothing; a virtual machine enrolled with a
// laptop's serial neither resumes the laptop nor keeps it from being suspended.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { MdmComplianceConfig } from '../../../src/config/portal-config.js';
import {
  compareWithMdmInventory,
  complianceChanges,
  judgeCompliance,
  suspendDevice,
  type InventoryPass,
} from '../../../src/core/devices/index.js';
import { type MdmDeviceCompliance, readMdmInventory } from '../../../src/mdm-client/inventory.js';
import { asDeviceId, asUserId, type DeviceId } from '../../../src/shared/ids.js';
import { auditRecords } from '../../../src/storage/audit-log.js';
import { deviceHistory } from '../../../src/storage/device-history.js';
import { capturedLog } from '../../support/captured-log.js';
import { MdmStandIn, STAND_IN_CLIENT_SECRET, type StandInDevice } from '../../support/mdm-stand-in.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const DAY_MS = 86_400_000;
const RULES: MdmComplianceConfig = {
  undetermined: 'keep',
  staleAfterMs: 7 * DAY_MS,
  maxSuspendPerPass: { kind: 'count', count: 2 },
};
const NOW = new Date('2026-11-29T12:00:00Z');

const record = (state: MdmDeviceCompliance['state'], lastCheckIn: Date | null = NOW): MdmDeviceCompliance => ({
  serial: 'S-1',
  id: 'id-1',
  state,
  lastCheckIn,
});

describe('the verdict on one device', () => {
  test('noncompliant suspends, compliant resumes, no record keeps', () => {
    assert.deepEqual(judgeCompliance(record({ kind: 'noncompliant' }), RULES, NOW), {
      action: 'suspend',
      reason: 'noncompliant',
      why: 'noncompliant',
    });
    assert.equal(judgeCompliance(record({ kind: 'compliant' }), RULES, NOW).action, 'resume');
    assert.equal(judgeCompliance(undefined, RULES, NOW).action, 'keep');
  });

  test('a grace period keeps the device until its end, then suspends it; one without an end follows the undetermined rule', () => {
    const until = new Date(NOW.getTime() + 1000);
    assert.equal(judgeCompliance(record({ kind: 'in-grace-period', until }), RULES, NOW).action, 'keep');
    const ended = judgeCompliance(record({ kind: 'in-grace-period', until }), RULES, new Date(until.getTime() + 1));
    assert.equal(ended.action, 'suspend');
    assert.match(ended.why, /grace period ended/);
    const endless = record({ kind: 'in-grace-period', until: null });
    assert.equal(judgeCompliance(endless, RULES, NOW).action, 'keep');
    assert.equal(judgeCompliance(endless, { ...RULES, undetermined: 'suspend' }, NOW).action, 'suspend');
  });

  test('an undetermined state is kept by default and suspended as noncompliant when the rule says so', () => {
    for (const reported of ['unknown', 'conflict', 'error', 'configManager']) {
      const undetermined = record({ kind: 'undetermined', reported });
      assert.equal(judgeCompliance(undetermined, RULES, NOW).action, 'keep');
      assert.deepEqual(judgeCompliance(undetermined, { ...RULES, undetermined: 'suspend' }, NOW), {
        action: 'suspend',
        reason: 'noncompliant',
        why: reported,
      });
    }
  });

  test('a device whose last check-in is older than staleAfter is stale, even when last reported compliant; without staleAfter never', () => {
    const old = record({ kind: 'compliant' }, new Date(NOW.getTime() - 8 * DAY_MS));
    assert.equal(judgeCompliance(old, RULES, NOW).action, 'suspend');
    assert.equal(judgeCompliance(old, { ...RULES, staleAfterMs: null }, NOW).action, 'resume');
    assert.equal(judgeCompliance(record({ kind: 'compliant' }, null), RULES, NOW).action, 'resume', 'no check-in time');
  });

  test('of two records of one MDM id, the one that checked in last counts, and of two equally recent the stricter', () => {
    const device = {
      deviceId: asDeviceId('dev_000000000001aaaaaaaaaaaa'),
      userId: asUserId('alice'),
      serial: 'S-1',
      mdmId: 'id-1',
      state: 'active' as const,
      suspension: null,
    };
    const older = record({ kind: 'noncompliant' }, new Date(NOW.getTime() - DAY_MS));
    const newer = record({ kind: 'compliant' });
    assert.deepEqual(complianceChanges([device], [older, newer], 'mdm_id', RULES, NOW), []);
    const changes = complianceChanges([device], [newer, record({ kind: 'noncompliant' })], 'mdm_id', RULES, NOW);
    assert.deepEqual(
      changes.map((change) => change.action),
      ['suspend'],
    );
  });

  test('of the records holding the serial of a device found by its serial, the strictest counts, whichever synced last', () => {
    const device = {
      deviceId: asDeviceId('dev_000000000002aaaaaaaaaaaa'),
      userId: asUserId('alice'),
      serial: 'S-1',
      mdmId: null,
      state: 'active' as const,
      suspension: null,
    };
    const laptop = record({ kind: 'noncompliant' }, new Date(NOW.getTime() - DAY_MS));
    const virtualMachine = { ...record({ kind: 'compliant' }), id: 'id-vm' };
    const actions = (records: MdmDeviceCompliance[]) =>
      complianceChanges([device], records, 'serial', RULES, NOW).map((change) => `${change.action} ${change.why}`);
    assert.deepEqual(actions([laptop, virtualMachine]), ['suspend noncompliant']);
    assert.deepEqual(actions([virtualMachine, laptop]), ['suspend noncompliant']);
    // A record left behind for 60 days (a logic board replaced) is not stale while another syncs...
    const leftBehind = { ...record({ kind: 'compliant' }, new Date(NOW.getTime() - 60 * DAY_MS)), id: 'id-old' };
    assert.deepEqual(actions([leftBehind, record({ kind: 'compliant' })]), []);
    // ...but what it last said of compliance counts, and with no record syncing it is stale.
    assert.deepEqual(actions([{ ...leftBehind, state: { kind: 'noncompliant' } }, record({ kind: 'compliant' })]), [
      'suspend noncompliant',
    ]);
    const alsoOld = record({ kind: 'compliant' }, new Date(NOW.getTime() - 30 * DAY_MS));
    assert.deepEqual(actions([leftBehind, alsoOld]), [`suspend last check-in ${alsoOld.lastCheckIn?.toISOString()}`]);
    // A record dated ahead is no proof that the device syncs.
    const ahead = { ...record({ kind: 'compliant' }, new Date(NOW.getTime() + 365 * DAY_MS)), id: 'id-ahead' };
    assert.equal(actions([leftBehind, ahead]).length, 1);
  });
});

describe('records dated ahead of the portal', () => {
  const device = {
    deviceId: asDeviceId('dev_000000000003aaaaaaaaaaaa'),
    userId: asUserId('alice'),
    serial: 'S-1',
    mdmId: null,
    state: 'suspended' as const,
    suspension: { reason: 'noncompliant', since: '2026-11-20T00:00:00Z', by: '(portal)', others: [] },
  };
  const active = { ...device, state: 'active' as const, suspension: null };
  const actions = (of: typeof device | typeof active, records: MdmDeviceCompliance[]) => {
    const inOneOrder = complianceChanges([of], records, 'serial', RULES, NOW);
    const inTheOther = complianceChanges([of], records.toReversed(), 'serial', RULES, NOW);
    assert.deepEqual(inTheOther, inOneOrder, 'in either order');
    return inOneOrder.map((change) => `${change.action} ${change.why}`);
  };
  const yesterday = new Date(NOW.getTime() - DAY_MS);
  const nextYear = new Date(NOW.getTime() + 365 * DAY_MS);

  test('a compliant record dated a year ahead neither resumes a device its record of yesterday finds noncompliant nor keeps one from being suspended', () => {
    const bogus = record({ kind: 'compliant' }, nextYear);
    assert.deepEqual(actions(device, [record({ kind: 'noncompliant' }, yesterday), bogus]), []);
    assert.deepEqual(actions(active, [record({ kind: 'noncompliant' }, yesterday), bogus]), ['suspend noncompliant']);
    assert.deepEqual(actions(active, [record({ kind: 'noncompliant' }, null), bogus]), ['suspend noncompliant']);
  });

  test('a noncompliant record dated ahead is not hidden by a compliant one of yesterday: of the two the stricter counts', () => {
    const bogus = record({ kind: 'noncompliant' }, nextYear);
    assert.deepEqual(actions(active, [record({ kind: 'compliant' }, yesterday), bogus]), ['suspend noncompliant']);
    assert.deepEqual(actions(device, [record({ kind: 'compliant' }, yesterday), bogus]), []);
    // Of two dated ahead, neither is newer: the stricter.
    assert.deepEqual(
      actions(active, [
        record({ kind: 'compliant' }, nextYear),
        record({ kind: 'noncompliant' }, new Date(NOW.getTime() + DAY_MS)),
      ]),
      ['suspend noncompliant'],
    );
  });

  test("a check-in a few minutes ahead (clocks drift) still counts as the latest, and a device's only record counts however dated", () => {
    const drifted = record({ kind: 'compliant' }, new Date(NOW.getTime() + 4 * 60_000));
    const byId = { ...device, mdmId: 'id-1' };
    assert.deepEqual(
      complianceChanges([byId], [record({ kind: 'noncompliant' }), drifted], 'mdm_id', RULES, NOW).map(
        (change) => `${change.action} ${change.why}`,
      ),
      ['resume compliant'],
    );
    assert.deepEqual(actions(device, [record({ kind: 'compliant' }, nextYear)]), ['resume compliant']);
    assert.deepEqual(actions(active, [record({ kind: 'noncompliant' }, nextYear)]), ['suspend noncompliant']);
  });
});

describe('a device suspended for another reason', () => {
  const suspendedFor = (reason: string, by: string, since: string) => ({
    deviceId: asDeviceId('dev_000000000002aaaaaaaaaaaa'),
    userId: asUserId('alice'),
    serial: 'S-1',
    mdmId: null,
    state: 'suspended' as const,
    suspension: { reason, since, by, others: [] },
  });

  test('noncompliant, it is suspended for compliance too, marked as suspended already; a compliance reason standing is not added again', () => {
    const outsideGroup = suspendedFor('jamf-group', 'jamf', '2026-11-28T10:00:00+00:00');
    const changes = complianceChanges([outsideGroup], [record({ kind: 'noncompliant' })], 'serial', RULES, NOW);
    assert.deepEqual(
      changes.map((change) => [change.action, change.reason, change.suspendedAlready]),
      [['suspend', 'noncompliant', true]],
    );
    const byHand = suspendedFor('noncompliant', 'desk', '2026-11-28T10:00:00+00:00');
    assert.deepEqual(complianceChanges([byHand], [record({ kind: 'noncompliant' })], 'serial', RULES, NOW), []);
  });

  test('compliant again, the compliance reason the portal made is resumed with its own time, wherever it stands', () => {
    const since = '2026-11-28T11:00:00+00:00';
    const device = {
      ...suspendedFor('jamf-group', 'jamf', '2026-11-28T10:00:00+00:00'),
      suspension: {
        reason: 'jamf-group',
        since: '2026-11-28T10:00:00+00:00',
        by: 'jamf',
        others: [{ reason: 'noncompliant', since, by: '(portal)' }],
      },
    };
    const changes = complianceChanges([device], [record({ kind: 'compliant' })], 'serial', RULES, NOW);
    assert.deepEqual(
      changes.map((change) => [change.action, change.reason, change.suspendedSince]),
      [['resume', 'noncompliant', since]],
    );
  });
});

describe("devices follow Intune's compliance", () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  let directory: string;
  const clock = shiftedClock();
  const log = capturedLog();
  const ids = new Map<string, DeviceId>();
  const SERIALS = ['CMP-1', 'CMP-2', 'CMP-3', 'CMP-4', 'CMP-5', 'CMP-6', 'CMP-7', 'CMP-8'];

  const setDevice = (serial: string, change: Partial<StandInDevice>) => {
    mdm.devices = mdm.devices.map((device) => (device.serial === serial ? { ...device, ...change } : device));
  };
  const pass = async (): Promise<InventoryPass> => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    return schedule.runNow();
  };
  const device = async (serial: string) => portal.admin.device(ids.get(serial) ?? '');
  const history = async (serial: string) => deviceHistory(portal.portal.ctx.db, ids.get(serial) ?? asDeviceId(''));
  const metrics = async () => (await fetch(portal.portal.metricsUrl ?? '')).text();

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.devices = SERIALS.map((serial, index) => ({ id: `dddddddd-0000-0000-0000-00000000000${index}`, serial }));
    directory = mkdtempSync(path.join(tmpdir(), 'mdm-compliance-'));
    const secretFile = path.join(directory, 'intune-secret');
    writeFileSync(secretFile, STAND_IN_CLIENT_SECRET, { mode: 0o600 });
    // Passes only at start and when a test runs one: P1D, the longest interval.
    portal = await startTestPortal({
      clock,
      logger: log.logger,
      config: {
        mdmInventory: {
          ...mdm.intuneConfig(secretFile),
          interval: 'P1D',
          maxRetirePerPass: 1,
          compliance: { undetermined: 'keep', staleAfter: 'P7D', maxSuspendPerPass: 2 },
        },
      },
    });
    // The pass the portal runs at start ends first: a test's pass would join it, with what it read then.
    await pass();
    for (const [index, serial] of SERIALS.entries()) {
      const registered = await portal.admin.registerDevice({
        user_id: `user${index}`,
        profile_id: 'employees',
        platform: 'windows',
        serial,
      });
      ids.set(serial, asDeviceId(registered.device_id));
    }
    // Past the margin after a registration: every device is compared.
    clock.advance(2000);
  });

  after(async () => {
    await portal?.close();
    await mdm?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  test('a noncompliant device is suspended as noncompliant by (portal), once however many passes see it', async () => {
    setDevice('CMP-1', { complianceState: 'noncompliant' });
    const first = await pass();
    assert.ok(first.outcome === 'retired', first.outcome);
    assert.deepEqual(first.compliance?.suspended, [ids.get('CMP-1')]);
    const suspended = await device('CMP-1');
    assert.equal(suspended.state, 'suspended');
    assert.equal(suspended.suspension?.reason, 'noncompliant');
    assert.equal(suspended.suspension?.by, '(portal)');
    const row = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).find(
      (entry) => entry.call === 'suspend_device',
    );
    assert.equal(row?.keyName, '(portal)');
    assert.equal(row?.userId, 'user0');
    const rows = (await history('CMP-1')).length;
    const again = await pass();
    assert.ok(again.outcome === 'retired');
    assert.deepEqual(again.compliance?.suspend, [], 'nothing left to suspend');
    assert.equal((await history('CMP-1')).length, rows, 'no history row for a pass that changed nothing');
    assert.equal((await device('CMP-2')).state, 'registered', 'the compliant ones stay');
  });

  test('compliant again: the device is resumed, back to the state the suspension interrupted', async () => {
    setDevice('CMP-1', { complianceState: 'compliant' });
    const done = await pass();
    assert.ok(done.outcome === 'retired');
    assert.deepEqual(done.compliance?.resumed, [ids.get('CMP-1')]);
    assert.equal((await device('CMP-1')).state, 'registered');
    assert.deepEqual(
      (await history('CMP-1')).slice(1).map((entry) => [entry.change, entry.reason, entry.by]),
      [
        ['suspended', 'noncompliant', '(portal)'],
        ['resumed', 'noncompliant', '(portal)'],
      ],
    );
  });

  test('a suspension made by hand is never ended by compliance, even one given the reason noncompliant', async () => {
    await portal.admin.suspendDevice({ device_id: ids.get('CMP-2') ?? '', reason: 'noncompliant' });
    await portal.admin.suspendDevice({ device_id: ids.get('CMP-3') ?? '' });
    const rows = (await history('CMP-2')).length;
    const done = await pass();
    assert.ok(done.outcome === 'retired');
    assert.deepEqual(done.compliance?.resume, []);
    for (const serial of ['CMP-2', 'CMP-3']) assert.equal((await device(serial)).state, 'suspended', serial);
    setDevice('CMP-2', { complianceState: 'noncompliant' });
    await pass();
    assert.equal((await device('CMP-2')).suspension?.by, 'secret', 'the suspension by hand stays as it was');
    assert.equal((await history('CMP-2')).length, rows);
    setDevice('CMP-2', { complianceState: 'compliant' });
    await portal.admin.resumeDevice(ids.get('CMP-2') ?? '');
    await portal.admin.resumeDevice(ids.get('CMP-3') ?? '');
  });

  test("a grace period keeps the device until its end by the portal's clock, then it is suspended", async () => {
    const ends = new Date(clock.now().getTime() + DAY_MS);
    setDevice('CMP-4', { complianceState: 'inGracePeriod', gracePeriodEnds: ends.toISOString() });
    await pass();
    assert.equal((await device('CMP-4')).state, 'registered', 'within the grace period');
    clock.advance(DAY_MS - 60_000);
    await pass();
    assert.equal((await device('CMP-4')).state, 'registered', 'a minute before its end');
    clock.advance(2 * 60_000);
    const done = await pass();
    assert.ok(done.outcome === 'retired');
    assert.match(done.compliance?.suspend[0]?.why ?? '', /grace period ended/);
    const suspended = await device('CMP-4');
    assert.equal(suspended.state, 'suspended');
    assert.equal(suspended.suspension?.reason, 'noncompliant');
  });

  test('unknown, conflict and error are kept (the default rule)', async () => {
    setDevice('CMP-5', { complianceState: 'unknown' });
    setDevice('CMP-6', { complianceState: 'conflict' });
    setDevice('CMP-7', { complianceState: 'error' });
    await pass();
    for (const serial of ['CMP-5', 'CMP-6', 'CMP-7']) assert.equal((await device(serial)).state, 'registered', serial);
  });

  test('a device that has not checked in for staleAfter is suspended as stale, and resumed once it checks in compliant', async () => {
    setDevice('CMP-8', { lastSync: new Date(clock.now().getTime() - 8 * DAY_MS).toISOString() });
    await pass();
    const stale = await device('CMP-8');
    assert.equal(stale.state, 'suspended');
    assert.equal(stale.suspension?.reason, 'stale');
    setDevice('CMP-8', { lastSync: clock.now().toISOString() });
    await pass();
    assert.equal((await device('CMP-8')).state, 'registered');
  });

  test('a pass that would suspend more than maxSuspendPerPass suspends none, says so in the metrics, and acts once it would not', async () => {
    for (const serial of ['CMP-5', 'CMP-6', 'CMP-7']) setDevice(serial, { complianceState: 'noncompliant' });
    const held = await pass();
    assert.ok(held.outcome === 'retired');
    assert.equal(held.compliance?.held, true);
    assert.equal(held.compliance?.suspend.length, 3);
    assert.equal(held.compliance?.suspendLimit, 2);
    assert.deepEqual(held.compliance?.suspended, []);
    for (const serial of ['CMP-5', 'CMP-6', 'CMP-7']) assert.equal((await device(serial)).state, 'registered', serial);
    assert.match(await metrics(), /^vpn_portal_mdm_inventory_refusing\{reason="too-many-suspensions"\} 1$/m);
    const again = await pass();
    assert.ok(again.outcome === 'retired');
    assert.equal(again.compliance?.held, true, 'held again at the next pass');
    const refusals = log.lines().filter((line) => /would suspend more devices/.test(line.msg ?? ''));
    assert.equal(refusals.length, 1, 'logged once while it lasts');
    assert.equal(refusals[0]?.['suspend'], 3);
    const config = portal.portal.ctx.config.mdmInventory;
    assert.ok(config !== null);
    const dryRun = await compareWithMdmInventory(portal.portal.ctx, config);
    assert.ok(dryRun.outcome === 'dry-run');
    assert.deepEqual(dryRun.compliance?.suspend.map((change) => change.serial).sort(), ['CMP-5', 'CMP-6', 'CMP-7']);
    assert.equal(dryRun.compliance?.held, true);
    setDevice('CMP-7', { complianceState: 'compliant' });
    const done = await pass();
    assert.ok(done.outcome === 'retired');
    assert.equal(done.compliance?.suspended.length, 2);
    assert.match(await metrics(), /^vpn_portal_mdm_inventory_refusing\{reason="too-many-suspensions"\} 0$/m);
  });

  test('a record that checked in while a long reading was under way counts, not an old one beside it', async () => {
    const config = portal.portal.ctx.config.mdmInventory;
    assert.ok(config !== null);
    assert.equal((await device('CMP-2')).state, 'registered');
    const began = clock.now().getTime();
    // CMP-2 was enrolled again: Intune keeps its old record, without a sync for 60 days, beside
    // the new one, which syncs six minutes into a reading of a large tenant that takes ten.
    const devices = mdm.devices;
    mdm.devices = [
      ...devices.map((entry) =>
        entry.serial === 'CMP-2' ? { ...entry, lastSync: new Date(began - 60 * DAY_MS).toISOString() } : entry,
      ),
      {
        id: 'dddddddd-0000-0000-0000-0000000000aa',
        serial: 'CMP-2',
        lastSync: new Date(began + 6 * 60_000).toISOString(),
      },
    ];
    const dryRun = await compareWithMdmInventory(portal.portal.ctx, config, async (options) => {
      const inventory = await readMdmInventory(config.source, options);
      clock.advance(10 * 60_000);
      return inventory;
    });
    mdm.devices = devices;
    assert.ok(dryRun.outcome === 'dry-run', dryRun.outcome);
    assert.deepEqual(
      dryRun.compliance?.suspend.filter((change) => change.serial === 'CMP-2'),
      [],
      'the check-in made during the reading is not a clock set wrong: the new record counts, and it is recent',
    );
  });

  test("a virtual machine enrolled with a laptop's serial neither keeps the laptop from being suspended nor resumes it", async () => {
    const registered = await portal.admin.registerDevice({
      user_id: 'user9',
      profile_id: 'employees',
      platform: 'windows',
      serial: 'CMP-9',
    });
    ids.set('CMP-9', asDeviceId(registered.device_id));
    clock.advance(2000);
    const at = (offsetMs: number) => new Date(clock.now().getTime() + offsetMs).toISOString();
    const devices = mdm.devices;
    // The laptop's own record finds it noncompliant: it is suspended.
    const laptop: StandInDevice = {
      id: 'dddddddd-0000-0000-0000-0000000000b9',
      serial: 'CMP-9',
      complianceState: 'noncompliant',
      lastSync: at(-3_600_000),
    };
    mdm.devices = [...devices, laptop];
    const alone = await pass();
    assert.ok(alone.outcome === 'retired', alone.outcome);
    assert.deepEqual(alone.compliance?.suspended, [ids.get('CMP-9')]);
    // A virtual machine enrolled with the laptop's serial reports compliant, and syncs after the
    // laptop: the suspension stands.
    clock.advance(60_000);
    const virtualMachine: StandInDevice = {
      id: 'dddddddd-0000-0000-0000-0000000000c9',
      serial: 'CMP-9',
      lastSync: at(0),
    };
    mdm.devices = [...devices, laptop, virtualMachine];
    const beside = await pass();
    assert.ok(beside.outcome === 'retired', beside.outcome);
    assert.deepEqual(
      beside.compliance?.resumed,
      [],
      'a record enrolled beside the laptop does not undo its suspension',
    );
    assert.equal((await device('CMP-9')).suspension?.reason, 'noncompliant');
    // The laptop itself compliant again: it is resumed.
    mdm.devices = [...devices, { ...laptop, complianceState: 'compliant', lastSync: at(0) }, virtualMachine];
    const compliant = await pass();
    assert.ok(compliant.outcome === 'retired', compliant.outcome);
    assert.deepEqual(compliant.compliance?.resumed, [ids.get('CMP-9')]);
    // Noncompliant again, while the virtual machine synced later still: it is suspended again.
    clock.advance(60_000);
    mdm.devices = [...devices, { ...laptop, lastSync: at(-30_000) }, { ...virtualMachine, lastSync: at(0) }];
    const again = await pass();
    assert.ok(again.outcome === 'retired', again.outcome);
    assert.deepEqual(
      again.compliance?.suspended,
      [ids.get('CMP-9')],
      'nor does it keep the laptop from being suspended',
    );
    mdm.devices = devices;
  });
});

describe("devices follow a JSON inventory's compliant", () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  const clock = shiftedClock();
  const ids = new Map<string, DeviceId>();

  const pass = async (): Promise<InventoryPass> => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    return schedule.runNow();
  };
  const state = async (serial: string) => (await portal.admin.device(ids.get(serial) ?? '')).state;

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.jsonAnswer = ['JS-1', { serial: 'JS-2' }, { serial: 'JS-3', compliant: true }];
    portal = await startTestPortal({
      clock,
      config: {
        mdmInventory: {
          ...mdm.jsonConfig(),
          interval: 'P1D',
          maxRetirePerPass: 1,
          compliance: { maxSuspendPerPass: 1 },
        },
      },
    });
    // The pass the portal runs at start ends first: a test's pass would join it, with what it read then.
    await pass();
    for (const serial of ['JS-1', 'JS-2', 'JS-3']) {
      const registered = await portal.admin.registerDevice({
        user_id: 'alice',
        profile_id: 'employees',
        platform: 'macos',
        serial,
      });
      ids.set(serial, asDeviceId(registered.device_id));
    }
    clock.advance(2000);
  });

  after(async () => {
    await portal?.close();
    await mdm?.close();
  });

  test('"compliant": false suspends, true resumes; a string or an object without it is presence only', async () => {
    mdm.jsonAnswer = ['JS-1', { serial: 'JS-2' }, { serial: 'JS-3', compliant: false }];
    await pass();
    assert.equal(await state('JS-3'), 'suspended');
    assert.equal(await state('JS-1'), 'registered');
    assert.equal(await state('JS-2'), 'registered');
    mdm.jsonAnswer = ['JS-1', { serial: 'JS-2' }, { serial: 'JS-3', compliant: true }];
    await pass();
    assert.equal(await state('JS-3'), 'registered');
  });

  test('devices suspended already for another reason do not count against maxSuspendPerPass: each is suspended for compliance too', async () => {
    const ctx = portal.portal.ctx;
    for (const serial of ['JS-1', 'JS-2'])
      await suspendDevice(ctx, { deviceId: ids.get(serial) ?? asDeviceId(''), reason: 'jamf-group', by: 'jamf' });
    mdm.jsonAnswer = [
      { serial: 'JS-1', compliant: false },
      { serial: 'JS-2', compliant: false },
      { serial: 'JS-3', compliant: true },
    ];
    const done = await pass();
    assert.ok(done.outcome === 'retired');
    assert.equal(done.compliance?.held, false, 'nothing would leave the nodes');
    assert.equal(done.compliance?.suspend.length, 2);
    for (const serial of ['JS-1', 'JS-2']) {
      const suspension = (await portal.admin.device(ids.get(serial) ?? '')).suspension;
      assert.deepEqual(
        [suspension?.reason, ...(suspension?.other_reasons.map((other) => other.reason) ?? [])],
        ['jamf-group', 'noncompliant'],
        serial,
      );
    }
    mdm.jsonAnswer = ['JS-1', { serial: 'JS-2' }, { serial: 'JS-3', compliant: true }];
    for (const serial of ['JS-1', 'JS-2']) await portal.admin.resumeDevice(ids.get(serial) ?? '');
  });

  test('a malformed entry makes the inventory unreadable: nothing is retired or suspended', async () => {
    mdm.jsonAnswer = [{ serial: 'JS-3', compliant: 'false' }];
    const done = await pass();
    assert.ok(done.outcome === 'unreadable');
    assert.match(done.reason, /entry 0 .*JS-3/);
    for (const serial of ['JS-1', 'JS-2', 'JS-3']) assert.equal(await state(serial), 'registered', serial);
  });
});
