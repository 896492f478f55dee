// The Jamf Pro webhook receiver at {baseUrl}mdm/jamf with Jamf-shaped deliveries: a missing or
// wrong credential is 401 (audited, nothing changed) and an address outside the allow-list 403;
// leaving the allowed smart group suspends (reason `jamf-group`), joining it resumes only that
// suspension, and a repeated delivery changes nothing; of a "left" and a "joined" of one
// moment, or of one event, the "left" stands; another group's change, devices the
// portal does not know and event types it does not act on are answered 200 and counted; a body
// it cannot read is a 400 (415 for XML, 413 past 1 MiB; a NUL or a lone surrogate in the event's or the group's name a 400 on both databases); devices named by Jamf id alone are looked up in Jamf
// Pro's inventory (a stand-in) when `mdmInventory` is Jamf Pro's; `ComputerInventoryCompleted`
// completes a device's identifiers.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { DeviceInfo } from '../../../src/protocol/admin-api.js';
import { auditLog, portalState } from '../../support/admin-keys.js';
import { clearOfMinuteEnd } from '../../support/audit-minute.js';
import {
  ALLOWED_GROUP,
  BASIC_AUTH,
  deliver,
  groupChange,
  groupChangeByIds,
  inventoryCompleted,
  JAMF_HEADER,
  JAMF_HEADER_VALUE,
  JAMF_USER,
  jamfPushOption,
  secretsFolder,
} from '../../support/jamf-webhooks.js';
import { MdmStandIn, STAND_IN_CLIENT_SECRET } from '../../support/mdm-stand-in.js';
import { startTestPortal, type TestPortal, metricsText } from '../../support/test-portal.js';

const MOBILE_GROUP = { id: 31, name: 'VPN allowed phones' } as const;

async function jamfPortal(
  t: TestContext,
  jamf: { readonly allowList?: string[] } = {},
  inventory: MdmStandIn | null = null,
): Promise<{ portal: TestPortal; receiver: string }> {
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const option = {
    ...jamfPushOption(folder, [
      { kind: 'computer', id: ALLOWED_GROUP.id },
      { kind: 'mobileDevice', name: MOBILE_GROUP.name },
    ]),
    ...jamf,
  };
  const clientSecretFile = path.join(folder, 'client-secret');
  writeFileSync(clientSecretFile, STAND_IN_CLIENT_SECRET, { mode: 0o600 });
  const mdmInventory = inventory === null ? null : { ...inventory.jamfConfig(clientSecretFile), interval: 'P1D' };
  const portal = await startTestPortal({ config: { mdmPush: { jamf: option }, mdmInventory } });
  t.after(() => portal.close());
  return { portal, receiver: `${portal.portal.url}/vpn-user-portal/mdm/jamf` };
}

/** Registers one of alice's devices: a Mac, or a phone (`ios`), which only mobile device groups resume. */
function register(
  portal: TestPortal,
  identifiers: { serial?: string; mdm_id?: string },
  platform: 'macos' | 'ios' = 'macos',
): Promise<DeviceInfo> {
  return portal.admin.registerDevice({ user_id: 'alice', profile_id: 'employees', platform, ...identifiers });
}

async function historyOf(portal: TestPortal, deviceId: string): Promise<string[]> {
  const rows = await portal.portal.ctx.db
    .selectFrom('device_history')
    .select(['change', 'reason', 'changed_by'])
    .where('device_id', '=', deviceId)
    .orderBy('at')
    .orderBy('history_id')
    .execute();
  return rows.map((row) => `${row.change} ${row.reason ?? '-'} ${row.changed_by ?? '-'}`);
}

test('a delivery without the configured credential is refused with 401, audited, and changes nothing', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const device = await register(portal, { serial: 'C02AUTH0001', mdm_id: 'UDID-AUTH-1' });
  const removal = groupChange('computer', ALLOWED_GROUP, {
    removed: [{ jssID: 5, udid: 'UDID-AUTH-1', serialNumber: 'C02AUTH0001' }],
  });
  const before = await portalState(portal);
  const basic = (user: string, password: string) => ({
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  });
  // Refusals of one reason are one audit row a minute: the five are sent within one minute.
  await clearOfMinuteEnd();
  const refused: Record<string, string>[] = [
    {},
    basic(JAMF_USER, 'wrong password'),
    basic('someone-else', 'correct horse battery staple'),
    { authorization: 'Bearer whatever' },
    { [JAMF_HEADER]: 'not-the-value' },
  ];
  for (const headers of refused) {
    const answer = await deliver(receiver, removal, headers);
    assert.equal(answer.status, 401, JSON.stringify(headers));
    assert.deepEqual(answer.body, { error: 'authentication required: the credential configured in Jamf Pro' });
  }
  assert.deepEqual(await portalState(portal), before, 'no refused delivery changed anything');
  assert.equal((await portal.admin.device(device.device_id)).state, 'registered');
  // Refusals of one source and reason within a minute are one row, counted (the audit log's rule).
  const refusals = (await auditLog(portal)).filter((record) => record.call === 'jamf webhook');
  assert.ok(refusals.every((record) => record.status === 401 && record.keyName === null));
  assert.deepEqual(refusals.map((record) => record.detail).sort(), [
    'no credential',
    'wrong Basic credentials',
    'wrong x-jamf-secret header',
  ]);

  // The header Jamf sends with header authentication is accepted as well as Basic.
  const accepted = await deliver(receiver, removal, { [JAMF_HEADER]: JAMF_HEADER_VALUE });
  assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
  assert.equal((await portal.admin.device(device.device_id)).state, 'suspended');
});

test('a delivery from an address outside mdmPush.jamf.allowList is refused with 403', async (t) => {
  const { portal, receiver } = await jamfPortal(t, { allowList: ['192.0.2.0/24'] });
  const device = await register(portal, { mdm_id: 'UDID-ELSEWHERE' });
  const answer = await deliver(
    receiver,
    groupChange('mobile', MOBILE_GROUP, { removed: [{ jssID: 1, udid: 'UDID-ELSEWHERE' }] }),
  );
  assert.equal(answer.status, 403);
  assert.deepEqual(answer.body, { error: 'source address not allowed' });
  assert.equal((await portal.admin.device(device.device_id)).state, 'registered');
});

test('leaving the allowed group suspends, joining it resumes only that suspension, and a repeated delivery changes nothing', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const phone = await register(portal, { serial: 'F2LPHONE01', mdm_id: 'UDID-PHONE-1' }, 'ios');
  const bySerial = await register(portal, { serial: 'F2LPHONE02' }, 'ios');
  const byAdministrator = await register(portal, { mdm_id: 'UDID-PHONE-3' }, 'ios');
  const outsider = await register(portal, { mdm_id: 'UDID-PHONE-4' }, 'ios');
  await portal.admin.suspendDevice({ device_id: byAdministrator.device_id, reason: 'lost' });
  const members = [
    { jssID: 1, udid: 'UDID-PHONE-1', serialNumber: 'F2LPHONE01' },
    { jssID: 2, serialNumber: 'F2LPHONE02' },
    { jssID: 3, udid: 'UDID-PHONE-3' },
  ];

  const left = groupChange('mobile', MOBILE_GROUP, { removed: members });
  const first = await deliver(receiver, left);
  assert.equal(first.status, 200);
  assert.deepEqual(first.body, {
    event: 'SmartGroupMobileDeviceMembershipChange',
    handled: 'applied',
    suspended: 2,
    resumed: 0,
    refreshed: 0,
    unchanged: 1,
    unknown: 0,
  });
  for (const device of [phone, bySerial]) {
    const now = await portal.admin.device(device.device_id);
    assert.equal(now.state, 'suspended');
    assert.equal(now.suspension?.reason, 'jamf-group');
    assert.equal(now.suspension?.by, 'jamf');
  }
  assert.equal((await portal.admin.device(byAdministrator.device_id)).suspension?.reason, 'lost');

  const again = await deliver(receiver, left);
  assert.equal(again.status, 200);
  assert.equal(again.body['suspended'], 0);
  assert.equal(again.body['unchanged'], 3);
  assert.deepEqual(await historyOf(portal, phone.device_id), ['registered - secret', 'suspended jamf-group jamf']);

  // Another group's change is none of the portal's business.
  const otherGroup = await deliver(
    receiver,
    groupChange('mobile', { id: 99, name: 'Lab iPads' }, { removed: [{ jssID: 4, udid: 'UDID-PHONE-4' }] }),
  );
  assert.equal(otherGroup.status, 200);
  assert.equal(otherGroup.body['handled'], 'ignored');
  assert.equal((await portal.admin.device(outsider.device_id)).state, 'registered');

  const joined = groupChange('mobile', MOBILE_GROUP, { added: members });
  const back = await deliver(receiver, joined);
  assert.equal(back.status, 200);
  assert.equal(back.body['resumed'], 2);
  assert.equal(back.body['unchanged'], 1);
  assert.equal((await portal.admin.device(phone.device_id)).state, 'registered');
  assert.equal((await portal.admin.device(bySerial.device_id)).state, 'registered');
  const stillSuspended = await portal.admin.device(byAdministrator.device_id);
  assert.equal(stillSuspended.state, 'suspended', "joining the group does not end an administrator's suspension");
  assert.equal(stillSuspended.suspension?.reason, 'lost');
  const backAgain = await deliver(receiver, joined);
  assert.equal(backAgain.body['resumed'], 0);
  assert.deepEqual(await historyOf(portal, phone.device_id), [
    'registered - secret',
    'suspended jamf-group jamf',
    'resumed jamf-group jamf',
  ]);

  // A computer group named by id works alike.
  const mac = await register(portal, { serial: 'C02MAC0001', mdm_id: 'UDID-MAC-1' });
  const macLeft = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { removed: [{ jssID: 8, udid: 'UDID-MAC-1', serialNumber: 'C02MAC0001' }] }),
  );
  assert.equal(macLeft.body['suspended'], 1);
  assert.equal((await portal.admin.device(mac.device_id)).suspension?.reason, 'jamf-group');
  const calls = (await auditLog(portal)).filter((record) => record.call === 'suspend_device').map((r) => r.keyName);
  assert.ok(calls.includes('(portal)'), "the webhook's suspensions are audited as the portal's own");
});

test('unknown devices and event types are answered 200, logged and counted; a body the portal cannot read is refused', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const device = await register(portal, { serial: 'C02KNOWN01', mdm_id: 'UDID-KNOWN-1' });
  const before = await portalState(portal);

  const unknown = await deliver(
    receiver,
    groupChange('mobile', MOBILE_GROUP, { removed: [{ jssID: 40, udid: 'UDID-NOBODY', serialNumber: 'NOBODY' }] }),
  );
  assert.equal(unknown.status, 200);
  assert.equal(unknown.body['unknown'], 1);
  // Jamf's computer sample names the devices by their Jamf id alone: nothing to match them by.
  // Without mdmInventory of Jamf Pro there is nothing to look the ids up in.
  const idsOnly = groupChangeByIds('computer', ALLOWED_GROUP, { removed: [41, 42] });
  const byIds = await deliver(receiver, idsOnly);
  assert.equal(byIds.status, 200);
  assert.equal(byIds.body['unknown'], 2);

  const checkIn = await deliver(receiver, {
    event: { computer: { udid: 'UDID-KNOWN-1', serialNumber: 'C02KNOWN01' }, trigger: 'CHECKIN', username: 'alice' },
    webhook: { eventTimestamp: 1_764_400_000_000, id: 8, name: 'check-in', webhookEvent: 'ComputerCheckIn' },
  });
  assert.equal(checkIn.status, 200);
  assert.equal(checkIn.body['handled'], 'ignored');

  const unreadable: [string, unknown, Record<string, string>, number, RegExp][] = [
    ['not JSON', '{"webhook":', { 'content-type': 'application/json' }, 400, /^the request body is not JSON$/],
    ['no webhook', { event: {} }, { 'content-type': 'application/json' }, 400, /needs "webhook.webhookEvent"/],
    [
      'a group change without its group',
      { event: { groupRemovedDevicesIds: [1] }, webhook: { webhookEvent: 'SmartGroupComputerMembershipChange' } },
      { 'content-type': 'application/json' },
      400,
      /^SmartGroupComputerMembershipChange: "jssid"/,
    ],
    [
      'XML',
      '<JSSEvent><webhook><webhookEvent>ComputerCheckIn</webhookEvent></webhook></JSSEvent>',
      { 'content-type': 'text/xml' },
      415,
      /set the webhook's content type to JSON/,
    ],
  ];
  // Text no database stores as sent, where the portal stores it: the event's name, the group's.
  for (const [what, text] of [
    ['a NUL', 'Managed\u0000Macs'],
    ['a lone surrogate', 'Managed \uD800'],
  ] as const) {
    unreadable.push([
      `${what} in the group's name`,
      groupChange('mobile', { id: MOBILE_GROUP.id, name: text }, { removed: [{ jssID: 43, udid: 'UDID-KNOWN-1' }] }),
      { 'content-type': 'application/json' },
      400,
      /^SmartGroupMobileDeviceMembershipChange: "name" holds a (NUL character|lone surrogate)/,
    ]);
    unreadable.push([
      `${what} in the event's name`,
      { event: {}, webhook: { webhookEvent: `JSS${text}` } },
      { 'content-type': 'application/json' },
      400,
      /^"webhook.webhookEvent" holds a (NUL character|lone surrogate)/,
    ]);
  }
  // A body past 1 MiB is refused before it is read whole.
  const huge = JSON.stringify({ event: { padding: 'x'.repeat(1024 * 1024) }, webhook: { webhookEvent: 'JSSStartup' } });
  unreadable.push(['past 1 MiB', huge, { 'content-type': 'application/json' }, 413, /^request body too large$/]);
  for (const [what, body, headers, status, message] of unreadable) {
    const answer = await deliver(receiver, body, { ...BASIC_AUTH, ...headers });
    assert.equal(answer.status, status, what);
    assert.match(String(answer.body['error']), message, what);
  }
  assert.deepEqual(await portalState(portal), before, 'nothing changed');
  assert.equal((await portal.admin.device(device.device_id)).state, 'registered');

  const metrics = await metricsText(portal);
  assert.match(metrics, /^vpn_portal_jamf_unknown_devices_total 3$/m);
  assert.match(metrics, /^vpn_portal_jamf_events_total\{event="SmartGroupMobileDeviceMembershipChange"\} 1$/m);
  assert.match(metrics, /^vpn_portal_jamf_events_total\{event="SmartGroupComputerMembershipChange"\} 1$/m);
  assert.match(metrics, /^vpn_portal_jamf_events_total\{event="other"\} 1$/m);
});

test('ComputerInventoryCompleted gives a device registered with one identifier the other, and only once', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const bySerial = await register(portal, { serial: 'C02INV0001' });
  const taken = await register(portal, { mdm_id: 'UDID-INV-TAKEN' });
  const withBoth = await register(portal, { serial: 'C02INV0003', mdm_id: 'UDID-INV-3' });

  const refreshed = await deliver(
    receiver,
    inventoryCompleted({ jssID: 1, serialNumber: 'C02INV0001', udid: 'UDID-INV-1' }),
  );
  assert.equal(refreshed.status, 200);
  assert.equal(refreshed.body['refreshed'], 1);
  assert.equal((await portal.admin.device(bySerial.device_id)).mdm_id, 'UDID-INV-1');
  const repeated = await deliver(
    receiver,
    inventoryCompleted({ jssID: 1, serialNumber: 'C02INV0001', udid: 'UDID-INV-1' }),
  );
  assert.equal(repeated.body['refreshed'], 0);
  assert.equal(repeated.body['unchanged'], 1);

  // Found by its UDID, it gets its serial.
  await deliver(receiver, inventoryCompleted({ jssID: 2, serialNumber: 'C02INV0002', udid: 'UDID-INV-TAKEN' }));
  assert.equal((await portal.admin.device(taken.device_id)).serial, 'C02INV0002');
  // A device that has both keeps them, whatever the event says.
  const conflicting = await deliver(
    receiver,
    inventoryCompleted({ jssID: 3, serialNumber: 'OTHER', udid: 'UDID-INV-3' }),
  );
  assert.equal(conflicting.body['unchanged'], 1);
  assert.equal((await portal.admin.device(withBoth.device_id)).serial, 'C02INV0003');

  const nobody = await deliver(receiver, inventoryCompleted({ jssID: 9, serialNumber: 'NOBODY', udid: 'UDID-NOBODY' }));
  assert.equal(nobody.status, 200);
  assert.equal(nobody.body['unknown'], 1);
});

test("devices named by their Jamf id alone are looked up in Jamf Pro's inventory, per kind, before anything changes", async (t) => {
  const jamf = await MdmStandIn.start();
  t.after(() => jamf.close());
  jamf.devices = [
    { id: 'UDID-MAC-41', serial: 'C02ID0041', kind: 'computer', jamfId: '41' },
    { id: 'UDID-MAC-42', serial: 'C02ID0042', kind: 'computer', jamfId: '42' },
    { id: 'UDID-MAC-43', serial: 'C02ID0043', kind: 'computer', jamfId: '43' },
    { id: 'UDID-PHONE-41', serial: 'F2LID0041', kind: 'mobile', jamfId: '41' },
  ];
  const { portal, receiver } = await jamfPortal(t, {}, jamf);
  const mac = await register(portal, { mdm_id: 'UDID-MAC-41' });
  const otherMac = await register(portal, { serial: 'C02ID0043' });
  const phone = await register(portal, { serial: 'F2LID0041' }, 'ios');

  // Jamf id 41 is a computer here: the phone with the same id stays; 99 is no device of Jamf's.
  const left = await deliver(receiver, groupChangeByIds('computer', ALLOWED_GROUP, { removed: [41, 43, 99] }));
  assert.equal(left.status, 200, JSON.stringify(left.body));
  assert.equal(left.body['suspended'], 2);
  assert.equal(left.body['unknown'], 1);
  assert.equal((await portal.admin.device(mac.device_id)).suspension?.reason, 'jamf-group');
  assert.equal((await portal.admin.device(otherMac.device_id)).state, 'suspended');
  assert.equal((await portal.admin.device(phone.device_id)).state, 'registered');
  assert.ok(
    jamf.requests.some((request) => request.url.startsWith('/jamf/api/v1/computers-inventory?section=HARDWARE')),
    'the computers were read',
  );
  const phoneLeft = await deliver(receiver, groupChangeByIds('mobile', MOBILE_GROUP, { removed: [41] }));
  assert.equal(phoneLeft.body['suspended'], 1);
  assert.equal((await portal.admin.device(phone.device_id)).suspension?.reason, 'jamf-group');

  // Jamf Pro unreachable: 503 and nothing changed, not a device taken for unknown.
  jamf.down = true;
  const before = await portalState(portal);
  const unreachable = await deliver(receiver, groupChangeByIds('computer', ALLOWED_GROUP, { added: [41, 43] }));
  assert.equal(unreachable.status, 503);
  assert.match(
    String(unreachable.body['error']),
    /^could not look up in Jamf Pro the devices the event names by Jamf id only \(nothing changed\): /,
  );
  assert.deepEqual(await portalState(portal), before);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'suspended');

  jamf.down = false;
  const joined = await deliver(receiver, groupChangeByIds('computer', ALLOWED_GROUP, { added: [41, 43] }));
  assert.equal(joined.status, 200);
  assert.equal(joined.body['resumed'], 2);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'registered');
});

test("a Jamf record that shares a suspended laptop's serial but has its own UDID joins the group without resuming the laptop", async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const laptop = await register(portal, { serial: 'C02SHARED01', mdm_id: 'UDID-LAPTOP-1' });
  const left = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, {
      removed: [{ jssID: 4, udid: 'UDID-LAPTOP-1', serialNumber: 'C02SHARED01' }],
    }),
  );
  assert.equal(left.body['suspended'], 1);

  // A virtual machine enrolled with the laptop's serial meets the group's criteria.
  const impostor = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { added: [{ jssID: 9, udid: 'UDID-VM-9', serialNumber: 'C02SHARED01' }] }),
  );
  assert.equal(impostor.status, 200);
  assert.equal(impostor.body['resumed'], 0);
  assert.equal(impostor.body['unknown'], 1);
  const still = await portal.admin.device(laptop.device_id);
  assert.equal(still.state, 'suspended', 'another record with the same serial does not bring the laptop back');
  assert.equal(still.suspension?.reason, 'jamf-group');

  // The laptop itself joining again, its UDID written in another case, resumes it.
  const back = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, {
      added: [{ jssID: 4, udid: 'udid-laptop-1', serialNumber: 'C02SHARED01' }],
    }),
  );
  assert.equal(back.body['resumed'], 1);
  assert.equal((await portal.admin.device(laptop.device_id)).state, 'registered');
});

test('a "joined the group" delivery older than the "left" one applied changes nothing, and a newer one resumes', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const mac = await register(portal, { serial: 'C02ORDER01', mdm_id: 'UDID-ORDER-1' });
  const named = { jssID: 6, udid: 'UDID-ORDER-1', serialNumber: 'C02ORDER01' };
  // Jamf Pro makes "joined" and then "left" within moments, and delivers them the other way round.
  const joined = groupChange('computer', ALLOWED_GROUP, { added: [named] });
  const left = groupChange('computer', ALLOWED_GROUP, { removed: [named] });

  assert.equal((await deliver(receiver, left)).body['suspended'], 1);
  const late = await deliver(receiver, joined);
  assert.equal(late.status, 200);
  assert.equal(late.body['resumed'], 0);
  assert.equal(late.body['unchanged'], 1);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'suspended', 'the older event does not resume it');
  // The same old delivery sent again later is as old.
  assert.equal((await deliver(receiver, joined)).body['resumed'], 0);
  assert.equal((await portal.admin.device(mac.device_id)).suspension?.reason, 'jamf-group');

  // The device joins the group again: a newer event resumes it, and the older "left" sent again changes nothing.
  assert.equal(
    (await deliver(receiver, groupChange('computer', ALLOWED_GROUP, { added: [named] }))).body['resumed'],
    1,
  );
  const replayed = await deliver(receiver, left);
  assert.equal(replayed.body['suspended'], 0);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'registered');
  assert.deepEqual(await historyOf(portal, mac.device_id), [
    'registered - secret',
    'suspended jamf-group jamf',
    'resumed jamf-group jamf',
  ]);
});

test('a device registered with its UDID in lower case is suspended when Jamf Pro names it in upper case', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const phone = await register(portal, { mdm_id: '5d8a7e1f0c3b2a49e6f7d8c9b0a1e2f3d4c5b6a7' }, 'ios');
  const named = { jssID: 3, udid: '5D8A7E1F0C3B2A49E6F7D8C9B0A1E2F3D4C5B6A7' };

  const left = await deliver(receiver, groupChange('mobile', MOBILE_GROUP, { removed: [named] }));
  assert.equal(left.status, 200);
  assert.equal(left.body['unknown'], 0);
  assert.equal(left.body['suspended'], 1);
  assert.equal((await portal.admin.device(phone.device_id)).suspension?.reason, 'jamf-group');

  assert.equal((await deliver(receiver, groupChange('mobile', MOBILE_GROUP, { added: [named] }))).body['resumed'], 1);
  assert.equal((await portal.admin.device(phone.device_id)).state, 'registered');
});

test("a mobile device group that shares the allowed computer group's id neither suspends nor resumes a phone", async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const phone = await register(portal, { serial: 'F2LPHONE12', mdm_id: 'UDID-PHONE-12' }, 'ios');
  const named = { jssID: 8, udid: 'UDID-PHONE-12', serialNumber: 'F2LPHONE12' };
  assert.equal(
    (await deliver(receiver, groupChange('mobile', MOBILE_GROUP, { removed: [named] }))).body['suspended'],
    1,
  );

  // Jamf Pro numbers mobile device groups apart from computer groups: its mobile device group 12
  // ("All iPhones") is not the allowed computer group 12.
  const namesake = { id: ALLOWED_GROUP.id, name: 'All iPhones' };
  const joined = await deliver(receiver, groupChange('mobile', namesake, { added: [named] }));
  assert.equal(joined.status, 200);
  assert.equal(joined.body['handled'], 'ignored');
  assert.equal(joined.body['resumed'], 0);
  const still = await portal.admin.device(phone.device_id);
  assert.equal(still.state, 'suspended', "joining another kind's group 12 does not bring the phone back");
  assert.equal(still.suspension?.reason, 'jamf-group');

  assert.equal((await deliver(receiver, groupChange('mobile', MOBILE_GROUP, { added: [named] }))).body['resumed'], 1);
  const left = await deliver(receiver, groupChange('mobile', namesake, { removed: [named] }));
  assert.equal(left.body['handled'], 'ignored');
  assert.equal((await portal.admin.device(phone.device_id)).state, 'registered');
});

/** `delivery` as Jamf Pro would send it with its clock at `at`. */
function datedAt(delivery: unknown, at: number): unknown {
  const body = delivery as { webhook: Record<string, unknown> };
  return { ...body, webhook: { ...body.webhook, eventTimestamp: at } };
}

test('a "joined the group" delivery dated ahead of the portal\'s clock resumes nothing, and the "left" deliveries after it still suspend', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const mac = await register(portal, { serial: 'C02AHEAD01', mdm_id: 'UDID-AHEAD-1' });
  const named = { jssID: 8, udid: 'UDID-AHEAD-1', serialNumber: 'C02AHEAD01' };
  const aYearAhead = Date.now() + 365 * 86_400_000;

  // Jamf Pro's clock a year ahead (set wrong, then put right): its "joined" must not stand
  // above every later event of the device.
  const ahead = await deliver(
    receiver,
    datedAt(groupChange('computer', ALLOWED_GROUP, { added: [named] }), aYearAhead),
  );
  assert.equal(ahead.status, 200);
  const left = await deliver(receiver, groupChange('computer', ALLOWED_GROUP, { removed: [named] }));
  assert.equal(left.body['suspended'], 1);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'suspended');

  // Nor does one dated ahead resume a suspended device.
  const again = await deliver(
    receiver,
    datedAt(groupChange('computer', ALLOWED_GROUP, { added: [named] }), aYearAhead),
  );
  assert.equal(again.status, 200);
  assert.equal(again.body['resumed'], 0);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'suspended');
  // A "left" dated ahead still suspends, and a "joined" made after it by a clock put right resumes.
  await portal.admin.resumeDevice(mac.device_id);
  const leftAhead = await deliver(
    receiver,
    datedAt(groupChange('computer', ALLOWED_GROUP, { removed: [named] }), aYearAhead),
  );
  assert.equal(leftAhead.body['suspended'], 1);
  const joined = await deliver(
    receiver,
    datedAt(groupChange('computer', ALLOWED_GROUP, { added: [named] }), Date.now()),
  );
  assert.equal(joined.body['resumed'], 1);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'registered');
  // Dated as late as a timestamp may be (past the year 9999), a "left" still suspends.
  const leftLast = await deliver(
    receiver,
    datedAt(groupChange('computer', ALLOWED_GROUP, { removed: [named] }), 8_640_000_000_000_000),
  );
  assert.equal(leftLast.body['suspended'], 1);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'suspended');
});

test("a time ahead of the portal's clock kept for a device before the upgrade orders no later delivery", async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const mac = await register(portal, { serial: 'C02AHEAD02', mdm_id: 'UDID-AHEAD-2' });
  const named = { jssID: 9, udid: 'UDID-AHEAD-2', serialNumber: 'C02AHEAD02' };
  // What an earlier version kept of a "joined" Jamf Pro dated a year ahead.
  await portal.portal.ctx.db
    .updateTable('devices')
    .set({ jamf_event_at: new Date(Date.now() + 365 * 86_400_000).toISOString() })
    .where('device_id', '=', mac.device_id)
    .execute();
  const left = await deliver(receiver, groupChange('computer', ALLOWED_GROUP, { removed: [named] }));
  assert.equal(left.body['suspended'], 1);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'suspended');
});

test('a "left" and a "joined" of one device with the same eventTimestamp leave it suspended, whichever is delivered first', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const mac = await register(portal, { serial: 'C02TIE0001', mdm_id: 'UDID-TIE-1' });
  const other = await register(portal, { serial: 'C02TIE0002', mdm_id: 'UDID-TIE-2' });
  const named = { jssID: 21, udid: 'UDID-TIE-1', serialNumber: 'C02TIE0001' };
  const otherNamed = { jssID: 22, udid: 'UDID-TIE-2', serialNumber: 'C02TIE0002' };
  // Jamf Pro keeps its times to the millisecond: two changes of one device within one are made
  // in an order the portal cannot tell, and a device that may have left must not stay on.
  const at = Date.now() - 60_000;

  assert.equal(
    (await deliver(receiver, datedAt(groupChange('computer', ALLOWED_GROUP, { removed: [named] }), at))).body[
      'suspended'
    ],
    1,
  );
  const joinedAfter = await deliver(receiver, datedAt(groupChange('computer', ALLOWED_GROUP, { added: [named] }), at));
  assert.equal(joinedAfter.status, 200);
  assert.equal(joinedAfter.body['resumed'], 0);
  assert.equal(joinedAfter.body['unchanged'], 1);
  const still = await portal.admin.device(mac.device_id);
  assert.equal(still.state, 'suspended', 'a "joined" as old as the "left" applied does not resume the device');
  assert.equal(still.suspension?.reason, 'jamf-group');

  // The other way round: the "left" delivered after the "joined" of the same time suspends.
  await deliver(receiver, datedAt(groupChange('computer', ALLOWED_GROUP, { added: [otherNamed] }), at));
  const leftAfter = await deliver(
    receiver,
    datedAt(groupChange('computer', ALLOWED_GROUP, { removed: [otherNamed] }), at),
  );
  assert.equal(leftAfter.body['suspended'], 1);
  assert.equal((await portal.admin.device(other.device_id)).state, 'suspended');
  // And the "joined" sent again (a retry) does not bring it back either.
  const retried = await deliver(receiver, datedAt(groupChange('computer', ALLOWED_GROUP, { added: [otherNamed] }), at));
  assert.equal(retried.body['resumed'], 0);
  assert.equal((await portal.admin.device(other.device_id)).state, 'suspended');

  // A "joined" made later resumes as ever.
  const later = await deliver(receiver, datedAt(groupChange('computer', ALLOWED_GROUP, { added: [named] }), at + 1));
  assert.equal(later.body['resumed'], 1);
  assert.equal((await portal.admin.device(mac.device_id)).state, 'registered');
});

test('one event that names a device among those that left and, by another identifier, among those that joined leaves it suspended', async (t) => {
  const { portal, receiver } = await jamfPortal(t);
  const dated = await register(portal, { serial: 'F2LBOTH01', mdm_id: 'UDID-BOTH-1' }, 'ios');
  const undated = await register(portal, { serial: 'F2LBOTH02', mdm_id: 'UDID-BOTH-2' }, 'ios');
  for (const [device, serial, udid] of [
    [dated, 'F2LBOTH01', 'UDID-BOTH-1'],
    [undated, 'F2LBOTH02', 'UDID-BOTH-2'],
  ] as const) {
    // The device's own record left; an entry naming only its serial joined (a record that
    // shares it, or a listing that gives mobile devices by serial).
    const change = groupChange('mobile', MOBILE_GROUP, {
      removed: [{ jssID: 1, udid, serialNumber: serial }],
      added: [{ jssID: 2, serialNumber: serial }],
    });
    const body = device === undated ? withoutTimestamp(change) : change;
    const answer = await deliver(receiver, body);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body['suspended'], 1, serial);
    assert.equal(answer.body['resumed'], 0, serial);
    const now = await portal.admin.device(device.device_id);
    assert.equal(now.state, 'suspended', `${serial}: the event's "joined" does not undo its own "left"`);
    assert.equal(now.suspension?.reason, 'jamf-group');
  }
});

/** `delivery` without `eventTimestamp`, as a Jamf Pro that did not say when would send it. */
function withoutTimestamp(delivery: unknown): unknown {
  const body = delivery as { webhook: Record<string, unknown> };
  const { eventTimestamp: _dropped, ...webhook } = body.webhook;
  return { ...body, webhook };
}
