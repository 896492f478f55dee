// Devices that leave the MDM are retired from its inventory, against a local
// stand-in of Microsoft Graph (the real one cannot be reached from the tests): a device removed
// from the inventory is retired by the second pass that misses it, as a change of `(portal)` in
// the audit log; one a single reading skipped is never retired;
// an inventory that suddenly lost half the devices, or cannot be read (a Jamf Pro list that changed
// between its pages among them), retires nothing, and the metrics say why; a dry run reports what a
// pass would do and changes nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { MdmInventoryConfig } from '../../../src/config/portal-config.js';
import { compareWithMdmInventory, syncWithMdmInventory } from '../../../src/core/devices/index.js';
import { Secret } from '../../../src/shared/secret.js';
import { auditRecords } from '../../../src/storage/audit-log.js';
import { MdmStandIn, STAND_IN_CLIENT_ID, STAND_IN_CLIENT_SECRET } from '../../support/mdm-stand-in.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

const DEVICES = ['MDM-1', 'MDM-2', 'MDM-3', 'MDM-4', 'MDM-5', 'MDM-6'].map((serial, index) => ({
  id: `00000000-0000-0000-0000-00000000000${index}`,
  serial,
}));

describe("devices are retired when they leave the MDM's inventory", () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  let directory: string;
  const ids = new Map<string, string>();

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.devices = [...DEVICES];
    directory = mkdtempSync(path.join(tmpdir(), 'mdm-inventory-'));
    const secretFile = path.join(directory, 'intune-secret');
    writeFileSync(secretFile, `${STAND_IN_CLIENT_SECRET}\n`, { mode: 0o600 });
    // "20%" of six live devices: at most one a pass.
    portal = await startTestPortal({
      config: { mdmInventory: { ...mdm.intuneConfig(secretFile), interval: 'PT1S', maxRetirePerPass: '20%' } },
    });
    for (const [index, device] of DEVICES.entries()) {
      const registered = await portal.admin.registerDevice({
        user_id: `user${index}`,
        profile_id: 'employees',
        platform: 'windows',
        serial: device.serial,
      });
      ids.set(device.serial, registered.device_id);
    }
    // Registered just now: compared from the pass after the next second on.
    await new Promise((resolve) => setTimeout(resolve, 1500));
  });

  after(async () => {
    await portal?.close();
    await mdm?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  const state = async (serial: string) => (await portal.admin.device(ids.get(serial) ?? '')).state;
  const metrics = async () => (await fetch(portal.portal.metricsUrl ?? '')).text();
  const sample = (text: string, line: string) =>
    Number(new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);

  const snapshot = async () => JSON.stringify((await portal.admin.devices()).devices);

  test('a dry run reports a device missed for the first time, to be retired if the pass after misses it too, and changes nothing', async () => {
    const config = portal.portal.ctx.config.mdmInventory;
    assert.ok(config !== null);
    const before = await snapshot();
    // The inventory as it would be without MDM-1 (the stand-in keeps it, so the schedule does not act).
    const without = new Set(DEVICES.filter((device) => device.serial !== 'MDM-1').map((device) => device.serial));
    const pass = await compareWithMdmInventory(portal.portal.ctx, config, async () => ({
      serials: without,
      ids: new Set(),
      compliance: [],
    }));
    assert.ok(pass.outcome === 'dry-run', pass.outcome);
    assert.deepEqual(pass.gone, [], 'no pass missed it before');
    assert.deepEqual(
      pass.missed.map((device) => device.serial),
      ['MDM-1'],
    );
    assert.equal(pass.limit, 1);
    assert.equal(await snapshot(), before);
  });

  test('a device removed from the inventory is retired by the second pass that misses it, as a change of (portal) in the audit log', async () => {
    mdm.devices = DEVICES.filter((device) => device.serial !== 'MDM-2');
    const removedAt = Date.now();
    await until('MDM-2 retired', async () => (await state('MDM-2')) === 'retired', 7000);
    assert.ok(Date.now() - removedAt < 4500, 'within two intervals (and the passes)');
    for (const serial of ['MDM-1', 'MDM-3', 'MDM-4']) assert.equal(await state(serial), 'registered');
    const row = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).find(
      (entry) => entry.call === 'retire_device',
    );
    assert.equal(row?.keyName, '(portal)');
    assert.equal(row?.userId, 'user1');
    assert.match(row?.parameters['reason'] ?? '', /gone from the intune inventory/);
    assert.equal(sample(await metrics(), 'vpn_portal_mdm_inventory_retired'), 1);
  });

  test('an inventory that suddenly lost half the devices retires nothing, logs and raises the metric', async () => {
    const before = await snapshot();
    mdm.devices = DEVICES.filter((device) => ['MDM-1', 'MDM-3'].includes(device.serial));
    await until(
      'the refusal in the metrics',
      async () => sample(await metrics(), 'vpn_portal_mdm_inventory_refusing{reason="too-many"}') === 1,
      5000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(await snapshot(), before);
    mdm.devices = DEVICES.filter((device) => device.serial !== 'MDM-2');
    await until(
      'the refusal cleared',
      async () => sample(await metrics(), 'vpn_portal_mdm_inventory_refusing{reason="too-many"}') === 0,
      5000,
    );
    assert.equal(await snapshot(), before);
  });

  test('an unreachable inventory retires nothing and raises the metric', async () => {
    const before = await snapshot();
    mdm.down = true;
    await until(
      'the refusal in the metrics',
      async () => sample(await metrics(), 'vpn_portal_mdm_inventory_refusing{reason="unreadable"}') === 1,
      5000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(await snapshot(), before);
    mdm.down = false;
    await until(
      'the refusal cleared',
      async () => sample(await metrics(), 'vpn_portal_mdm_inventory_refusing{reason="unreadable"}') === 0,
      5000,
    );
  });
  /** The portal's inventory settings, reading this Jamf Pro stand-in. */
  const readingJamf = (jamf: MdmStandIn): MdmInventoryConfig => {
    const config = portal.portal.ctx.config.mdmInventory;
    assert.ok(config !== null);
    return {
      ...config,
      source: {
        provider: 'jamf',
        url: `${jamf.url}/jamf`,
        clientId: STAND_IN_CLIENT_ID,
        clientSecret: new Secret(STAND_IN_CLIENT_SECRET),
      },
    };
  };

  test('a Jamf Pro computer deleted between two pages makes the pass unreadable: the computer the offsets skipped is not retired', async () => {
    const jamf = await MdmStandIn.start();
    try {
      // The live devices as Jamf computers, two a page: MDM-1 and MDM-3, MDM-4 and MDM-5, MDM-6.
      const computers = DEVICES.filter((device) => device.serial !== 'MDM-2');
      jamf.devices = computers;
      // MDM-1 leaves Jamf once page 0 is read: page 1 then holds MDM-5 and MDM-6, and MDM-4 is on no page read.
      jamf.afterJamfPage = (kind, page) => {
        if (kind === 'computer' && page === 0) jamf.devices = computers.slice(1);
      };
      const before = await snapshot();
      const pass = await syncWithMdmInventory(portal.portal.ctx, readingJamf(jamf));
      assert.equal(pass.outcome, 'unreadable');
      assert.equal(await state('MDM-4'), 'registered');
      assert.equal(await snapshot(), before);
    } finally {
      await jamf.close();
    }
  });
  test('a Jamf Pro computer deleted and another added between two pages, so the count adds up: the computer the offsets skipped is missed once and never retired, the deleted one is retired by the next pass', async () => {
    const jamf = await MdmStandIn.start();
    try {
      const computers = DEVICES.filter((device) => device.serial !== 'MDM-2');
      jamf.devices = computers;
      // Once page 0 (MDM-1, MDM-3) is read, MDM-1 leaves Jamf and a new computer joins at the end:
      // page 1 then holds MDM-5 and MDM-6, page 2 the new one, and MDM-4 is on no page read.
      const joined = { id: '00000000-0000-0000-0000-000000000099', serial: 'MDM-99' };
      jamf.afterJamfPage = (kind, page) => {
        if (kind === 'computer' && page === 0) jamf.devices = [...computers.slice(1), joined];
      };
      const jamfConfig = readingJamf(jamf);
      // The portal's own passes read the Intune stand-in; hold them still while this one reads Jamf.
      mdm.down = true;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      // Page 0 held MDM-1 before it left: this pass misses only MDM-4, which is there.
      const first = await syncWithMdmInventory(portal.portal.ctx, jamfConfig);
      assert.ok(first.outcome === 'retired', first.outcome);
      assert.deepEqual(
        first.missed.map((device) => device.serial),
        ['MDM-4'],
      );
      assert.deepEqual(first.retired, []);

      // The next reads are whole: MDM-4 is found again, MDM-1 missed once, then twice: retired.
      jamf.afterJamfPage = undefined;
      const second = await syncWithMdmInventory(portal.portal.ctx, jamfConfig);
      assert.ok(second.outcome === 'retired', second.outcome);
      assert.deepEqual([second.gone, second.missed.map((device) => device.serial)], [[], ['MDM-1']]);
      const third = await syncWithMdmInventory(portal.portal.ctx, jamfConfig);
      assert.ok(third.outcome === 'retired', third.outcome);
      assert.deepEqual(
        third.retired.map((device) => device.deviceId),
        [ids.get('MDM-1')],
      );
      assert.equal(await state('MDM-1'), 'retired');
      assert.equal(await state('MDM-4'), 'registered', 'the computer one reading skipped is never retired');
    } finally {
      mdm.down = false;
      await jamf.close();
    }
  });
});
