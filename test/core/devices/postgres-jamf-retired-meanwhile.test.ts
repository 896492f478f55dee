// A Jamf Pro event that lists several devices, one of which is retired by an administrator between
// the event's look-up of it and its row lock: that device has nothing left to suspend (or
// resume), and the event still applies to every other device it lists. Not one device's
// retirement may keep the devices after it in the list connected. The delivery is held right
// after it read the first device, the retirement runs through the Admin API, then the delivery
// goes on, so the race happens every time. PostgreSQL only: the held statement keeps its
// connection, and SQLite has one.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test, type TestContext } from 'node:test';
import { applyJamfEvent, JamfPushCounts } from '../../../src/core/devices/index.js';
import { parseJamfWebhook } from '../../../src/protocol/jamf-webhook.js';
import type { DeviceInfo } from '../../../src/protocol/admin-api.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { ALLOWED_GROUP, groupChange, jamfPushOption, secretsFolder } from '../../support/jamf-webhooks.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

async function jamfPortal(t: TestContext): Promise<TestPortal> {
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const portal = await startTestPortal({ config: { mdmPush: { jamf: jamfPushOption(folder) } } });
  t.after(() => portal.close());
  return portal;
}

function register(portal: TestPortal, serial: string, udid: string): Promise<DeviceInfo> {
  return portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'macos',
    serial,
    mdm_id: udid,
  });
}

/**
 * Applies `delivery` on a database handle that stands still right after the look-up of the
 * device with this UDID, runs `meanwhile`, then lets the delivery go on; its outcome or error.
 */
async function applyRaced(
  portal: TestPortal,
  delivery: unknown,
  heldUdid: string,
  meanwhile: () => Promise<unknown>,
): Promise<unknown> {
  const hold = new HoldStatement(
    (operation, text) =>
      operation.kind === 'SelectQueryNode' && text.includes('"devices"') && text.includes(`"${heldUdid}"`),
  );
  const ctx = portal.portal.ctx;
  const config = ctx.config.mdmPush.jamf;
  assert.ok(config !== null);
  const applying = applyJamfEvent(
    { ...ctx, db: ctx.db.withPlugin(hold) },
    config,
    parseJamfWebhook(delivery),
    new JamfPushCounts(),
  ).then(
    (outcome) => outcome,
    (error: unknown) => error,
  );
  await hold.reached;
  await meanwhile();
  hold.release();
  return applying;
}

test('a device retired between a "left" event\'s look-up and its lock is skipped, and the devices after it are still suspended', async (t) => {
  const portal = await jamfPortal(t);
  const retired = await register(portal, 'C02RACE0001', 'UDID-RACE-1');
  const second = await register(portal, 'C02RACE0002', 'UDID-RACE-2');
  const third = await register(portal, 'C02RACE0003', 'UDID-RACE-3');
  const left = groupChange('computer', ALLOWED_GROUP, {
    removed: [
      { jssID: 1, udid: 'UDID-RACE-1', serialNumber: 'C02RACE0001' },
      { jssID: 2, udid: 'UDID-RACE-2', serialNumber: 'C02RACE0002' },
      { jssID: 3, udid: 'UDID-RACE-3', serialNumber: 'C02RACE0003' },
    ],
  });

  const outcome = await applyRaced(portal, left, 'UDID-RACE-1', () => portal.admin.retireDevice(retired.device_id));
  assert.deepEqual(
    outcome,
    { handled: 'applied', suspended: 2, resumed: 0, refreshed: 0, unchanged: 0, unknown: 1 },
    outcome instanceof Error ? `${outcome.name}: ${outcome.message}` : undefined,
  );
  assert.equal((await portal.admin.device(retired.device_id)).state, 'retired');
  for (const device of [second, third]) {
    const now = await portal.admin.device(device.device_id);
    assert.equal(now.state, 'suspended', device.serial ?? '');
    assert.equal(now.suspension?.reason, 'jamf-group');
  }
});

test('a device retired between a "joined" event\'s look-up and its lock is skipped, and the devices after it are still resumed', async (t) => {
  const portal = await jamfPortal(t);
  const retired = await register(portal, 'C02RACE0011', 'UDID-RACE-11');
  const second = await register(portal, 'C02RACE0012', 'UDID-RACE-12');
  const members = [
    { jssID: 11, udid: 'UDID-RACE-11', serialNumber: 'C02RACE0011' },
    { jssID: 12, udid: 'UDID-RACE-12', serialNumber: 'C02RACE0012' },
  ];
  const ctx = portal.portal.ctx;
  const config = ctx.config.mdmPush.jamf;
  assert.ok(config !== null);
  await applyJamfEvent(
    ctx,
    config,
    parseJamfWebhook(groupChange('computer', ALLOWED_GROUP, { removed: members })),
    new JamfPushCounts(),
  );
  assert.equal((await portal.admin.device(second.device_id)).state, 'suspended');

  const joined = groupChange('computer', ALLOWED_GROUP, { added: members });
  const outcome = await applyRaced(portal, joined, 'UDID-RACE-11', () => portal.admin.retireDevice(retired.device_id));
  assert.deepEqual(
    outcome,
    { handled: 'applied', suspended: 0, resumed: 1, refreshed: 0, unchanged: 0, unknown: 1 },
    outcome instanceof Error ? `${outcome.name}: ${outcome.message}` : undefined,
  );
  assert.equal((await portal.admin.device(retired.device_id)).state, 'retired');
  assert.equal((await portal.admin.device(second.device_id)).state, 'registered');
});
