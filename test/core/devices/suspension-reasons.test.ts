// A device suspended by two automatic authors, the MDM's compliance (a JSON inventory stand-in)
// and Jamf Pro's smart group (webhook deliveries), stays off its node until both reasons have
// ended, in either order: the first author's resume ends only its own reason, the device stays
// suspended for the other (shown with that one's author and time), and its WireGuard peer comes
// back on the node (a stand-in that keeps what it is told) only with the last resume. The metrics
// count it under each reason that stands.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { test } from 'node:test';
import type { InventoryPass } from '../../../src/core/devices/index.js';
import type { DeviceInfo } from '../../../src/protocol/admin-api.js';
import { asDeviceId } from '../../../src/shared/ids.js';
import { deviceHistory } from '../../../src/storage/device-history.js';
import { ALLOWED_GROUP, deliver, groupChange, jamfPushOption, secretsFolder } from '../../support/jamf-webhooks.js';
import { MdmStandIn } from '../../support/mdm-stand-in.js';
import { startRevisionNode } from '../../support/revision-node.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { startPortalOnStandIn } from '../../support/stand-in-node.js';
import type { TestPortal } from '../../support/test-portal.js';

const SERIAL = 'C02TWO0001';
const UDID = 'UDID-TWO-1';
const JAMF_DEVICE = { jssID: 8, udid: UDID, serialNumber: SERIAL };

interface Lab {
  readonly portal: TestPortal;
  readonly deviceId: string;
  /** The MDM finds the device compliant or not, and a compliance pass runs. */
  compliance(compliant: boolean): Promise<InventoryPass>;
  /** Jamf Pro tells that the device left or joined the allowed smart group; the receiver's answer. */
  jamf(change: 'left' | 'joined'): Promise<Record<string, unknown>>;
  device(): Promise<DeviceInfo>;
  /** Whether the device's WireGuard peer is on the node, after a reconcile pass. */
  onNode(): Promise<boolean>;
  /** The device's history after its registration and configuration: change, reason, author. */
  history(): Promise<string[]>;
}

/** A portal with Jamf Pro's push and a JSON inventory's compliance, and a device with a WireGuard configuration on the node. */
async function startLab(t: TestContext): Promise<Lab> {
  const node = await startRevisionNode(t);
  const mdm = await MdmStandIn.start();
  t.after(() => mdm.close());
  mdm.devices = [{ id: UDID, serial: SERIAL, compliant: true }];
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const clock = shiftedClock();
  const portal = await startPortalOnStandIn(t, node.url, {
    clock,
    config: {
      mdmPush: { jamf: jamfPushOption(folder) },
      mdmInventory: { ...mdm.jsonConfig(), interval: 'P1D', maxRetirePerPass: 1, compliance: { maxSuspendPerPass: 1 } },
    },
  });
  await portal.reconcile();
  const pass = async (): Promise<InventoryPass> => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    return schedule.runNow();
  };
  // The pass the portal runs at start ends first: a test's pass would join it, with what it read then.
  await pass();
  const registered = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'macos',
    serial: SERIAL,
    mdm_id: UDID,
  });
  const deviceId = registered.device_id;
  const created = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees', device_id: deviceId },
    { accept: 'application/x-wireguard-profile' },
  );
  assert.equal(created.status, 200, created.text);
  const key = (await portal.admin.device(deviceId)).configurations[0]?.connection_id ?? '';
  assert.ok(node.peers.has(key), 'the configuration is on the node');
  // Past the margin after a registration: the device is compared.
  clock.advance(2000);
  const receiver = `${portal.portal.url}/vpn-user-portal/mdm/jamf`;
  return {
    portal,
    deviceId,
    async compliance(compliant) {
      mdm.devices = [{ id: UDID, serial: SERIAL, compliant }];
      return pass();
    },
    async jamf(change) {
      const delivery = groupChange(
        'computer',
        ALLOWED_GROUP,
        change === 'left' ? { removed: [JAMF_DEVICE] } : { added: [JAMF_DEVICE] },
      );
      const answer = await deliver(receiver, delivery);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body;
    },
    device: () => portal.admin.device(deviceId),
    async onNode() {
      await portal.reconcile();
      return node.peers.has(key);
    },
    async history() {
      const entries = await deviceHistory(portal.portal.ctx.db, asDeviceId(deviceId));
      return entries.slice(2).map((entry) => `${entry.change} ${entry.reason ?? '-'} ${entry.by ?? '-'}`);
    },
  };
}

/** The suspension the device's answer shows: reason and author. */
function shownOf(device: DeviceInfo): string | null {
  return device.suspension === null ? null : `${device.suspension.reason} ${device.suspension.by}`;
}

/** Every reason the device's answer lists: the one shown, then the other reasons. */
function reasonsOf(device: DeviceInfo): string[] {
  const suspension = device.suspension;
  if (suspension === null) return [];
  return [suspension, ...suspension.other_reasons].map((standing) => `${standing.reason} ${standing.by}`);
}

test('a noncompliant device that leaves the allowed Jamf group stays off its node once compliant again, and comes back when it joins the group', async (t) => {
  const lab = await startLab(t);
  await lab.compliance(false);
  assert.equal(shownOf(await lab.device()), 'noncompliant (portal)');
  assert.equal(await lab.onNode(), false);

  const left = await lab.jamf('left');
  assert.equal(left['unchanged'], 1, 'suspended already: nothing more leaves the node');
  const bothReasons = await lab.device();
  assert.equal(shownOf(bothReasons), 'noncompliant (portal)', 'the first suspension is shown');
  const metrics = await (await fetch(lab.portal.portal.metricsUrl ?? '')).text();
  assert.match(metrics, /^vpn_portal_suspended_devices\{reason="noncompliant"\} 1$/m);
  assert.match(metrics, /^vpn_portal_suspended_devices\{reason="jamf-group"\} 1$/m, 'counted under both reasons');

  const compliant = await lab.compliance(true);
  assert.ok(compliant.outcome === 'retired', compliant.outcome);
  assert.equal(await lab.onNode(), false, 'its peer is not back on the node');
  const outsideGroup = await lab.device();
  assert.equal(outsideGroup.state, 'suspended', 'still outside the allowed group');
  assert.deepEqual(compliant.compliance?.resumed, [], 'the noncompliant reason ended, but the device is not resumed');
  assert.deepEqual(reasonsOf(bothReasons), ['noncompliant (portal)', 'jamf-group jamf'], 'while both stood');
  assert.deepEqual(reasonsOf(outsideGroup), ['jamf-group jamf'], 'the standing reason is shown, with its author');

  const joined = await lab.jamf('joined');
  assert.equal(joined['resumed'], 1);
  const back = await lab.device();
  assert.equal(back.state, 'active');
  assert.equal(back.suspension, null);
  assert.equal(await lab.onNode(), true, 'the last reason ended: its peer is back');
  assert.deepEqual(await lab.history(), [
    'suspended noncompliant (portal)',
    'suspended jamf-group jamf',
    'resumed noncompliant (portal)',
    'resumed jamf-group jamf',
  ]);
});

test('a device outside the allowed Jamf group that turns noncompliant stays off its node when it joins the group, and comes back once compliant', async (t) => {
  const lab = await startLab(t);
  await lab.jamf('left');
  assert.equal(shownOf(await lab.device()), 'jamf-group jamf');
  assert.equal(await lab.onNode(), false);

  const noncompliant = await lab.compliance(false);
  assert.ok(noncompliant.outcome === 'retired', noncompliant.outcome);
  const bothReasons = await lab.device();
  assert.equal(shownOf(bothReasons), 'jamf-group jamf', 'the first suspension is shown');

  const joined = await lab.jamf('joined');
  assert.equal(await lab.onNode(), false, 'its peer is not back on the node');
  const stillNoncompliant = await lab.device();
  assert.equal(stillNoncompliant.state, 'suspended', 'still noncompliant');
  assert.equal(joined['resumed'], 0);
  assert.deepEqual(noncompliant.compliance?.suspended, [], 'suspended already: nothing more left the node');
  assert.deepEqual(reasonsOf(bothReasons), ['jamf-group jamf', 'noncompliant (portal)'], 'while both stood');
  assert.deepEqual(reasonsOf(stillNoncompliant), ['noncompliant (portal)']);

  const compliant = await lab.compliance(true);
  assert.ok(compliant.outcome === 'retired', compliant.outcome);
  assert.deepEqual(compliant.compliance?.resumed, [lab.deviceId]);
  assert.equal((await lab.device()).state, 'active');
  assert.equal(await lab.onNode(), true, 'the last reason ended: its peer is back');
});
