// Reading Jamf Pro's webhook bodies: the devices of a smart group change from the id lists and
// the entries, however an entry spells its fields (Jamf's camelCase, a mobile device group's
// display fields such as `Serial Number` and `UDID`); ComputerInventoryCompleted flat or nested;
// and what is refused, with the field it lacks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JamfWebhookError, parseJamfWebhook } from '../../src/protocol/jamf-webhook.js';

const webhook = (webhookEvent: string) => ({ eventTimestamp: 1_764_400_000_000, id: 3, name: 'vpn', webhookEvent });

test('a smart group change gives each device once, with the UDID and serial its entry spells in any of Jamf’s ways', () => {
  const event = parseJamfWebhook({
    event: {
      computer: false,
      groupAddedDevices: [
        { 'Display Name': 'iPad 1', 'Serial Number': 'F2L0001', UDID: 'udid-1', jssID: '5' },
        { serial_number: 'F2L0002', udid: '  ' },
        null,
      ],
      groupAddedDevicesIds: [5, 6],
      groupRemovedDevices: [],
      groupRemovedDevicesIds: [7],
      jssid: 31,
      name: 'VPN allowed phones',
      smartGroup: true,
    },
    webhook: webhook('SmartGroupMobileDeviceMembershipChange'),
  });
  assert.deepEqual(event, {
    kind: 'group-change',
    webhookEvent: 'SmartGroupMobileDeviceMembershipChange',
    devices: 'mobile',
    groupId: 31,
    groupName: 'VPN allowed phones',
    added: [
      { jamfId: 5, udid: 'udid-1', serial: 'F2L0001' },
      { jamfId: 6, udid: null, serial: null },
      { jamfId: null, udid: null, serial: 'F2L0002' },
    ],
    removed: [{ jamfId: 7, udid: null, serial: null }],
    at: new Date(1_764_400_000_000),
  });
});

test('ComputerInventoryCompleted is read flat or nested in "computer", and needs a UDID or serial', () => {
  const flat = parseJamfWebhook({
    event: { jssID: 9, udid: 'udid-9', serialNumber: 'C02009', deviceName: 'mac' },
    webhook: webhook('ComputerInventoryCompleted'),
  });
  assert.deepEqual(flat, {
    kind: 'inventory',
    webhookEvent: 'ComputerInventoryCompleted',
    device: { jamfId: 9, udid: 'udid-9', serial: 'C02009' },
  });
  const nested = parseJamfWebhook({
    event: { computer: { jssID: 9, serialNumber: 'C02009' } },
    webhook: webhook('ComputerInventoryCompleted'),
  });
  assert.deepEqual(nested.kind === 'inventory' ? nested.device : null, { jamfId: 9, udid: null, serial: 'C02009' });
  assert.throws(
    () => parseJamfWebhook({ event: { jssID: 9 }, webhook: webhook('ComputerInventoryCompleted') }),
    new JamfWebhookError('ComputerInventoryCompleted: the event names neither "udid" nor "serialNumber"'),
  );
});

test('other event types are named and left alone; a body that is no Jamf webhook, or a change without its group, is refused', () => {
  assert.deepEqual(parseJamfWebhook({ event: { anything: 1 }, webhook: webhook('JSSStartup') }), {
    kind: 'other',
    webhookEvent: 'JSSStartup',
  });
  for (const body of [
    null,
    [],
    { event: {} },
    { webhook: { webhookEvent: 'JSSStartup' } },
    { webhook: { webhookEvent: '' }, event: {} },
  ]) {
    assert.throws(() => parseJamfWebhook(body), /^JamfWebhookError: not a Jamf Pro webhook/, JSON.stringify(body));
  }
  assert.throws(
    () =>
      parseJamfWebhook({
        event: { jssid: 'twelve', name: 'VPN allowed' },
        webhook: webhook('SmartGroupComputerMembershipChange'),
      }),
    /^JamfWebhookError: SmartGroupComputerMembershipChange: "jssid": /,
  );
  assert.throws(
    () =>
      parseJamfWebhook({
        event: { jssid: 12, name: 'VPN allowed', groupRemovedDevicesIds: [-1] },
        webhook: webhook('SmartGroupComputerMembershipChange'),
      }),
    /"groupRemovedDevicesIds\.0": /,
  );
  // The time Jamf Pro made the event orders a device's events: one that is no time is refused.
  assert.throws(
    () =>
      parseJamfWebhook({
        event: { jssid: 12, name: 'VPN allowed' },
        webhook: { ...webhook('SmartGroupComputerMembershipChange'), eventTimestamp: '2026-12-03' },
      }),
    /^JamfWebhookError: "webhook\.eventTimestamp" must be a whole number of milliseconds since 1970$/,
  );
  const undated = parseJamfWebhook({
    event: { jssid: 12, name: 'VPN allowed' },
    webhook: { webhookEvent: 'SmartGroupComputerMembershipChange' },
  });
  assert.equal(undated.kind === 'group-change' ? undated.at : undefined, null);
});
