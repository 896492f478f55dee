// A device registered by its serial alone, while Jamf Pro holds another record with the same
// serial (a virtual machine enrolled with a laptop's serial): with `mdmInventory` of Jamf Pro (a
// stand-in), the records that hold the serial are looked up before such a device is resumed or
// given a UDID. Two records: a "joined" naming either resumes nothing (counted unknown) and a
// `ComputerInventoryCompleted` writes no UDID; one record: as ever. A "left" suspends without
// any look-up; Jamf Pro unreadable, a "joined" of such a device is a 503 that resumes nothing,
// the delivery's suspensions applied all the same. A record of the other kind (a virtual machine
// with a phone's serial) never resumes or binds the device, and a serial held by records of
// both kinds counts as shared; its "left" still suspends.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import {
  ALLOWED_GROUP,
  deliver,
  groupChange,
  inventoryCompleted,
  jamfPushOption,
  secretsFolder,
} from '../../support/jamf-webhooks.js';
import { MdmStandIn, STAND_IN_CLIENT_SECRET } from '../../support/mdm-stand-in.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const PHONE_GROUP = { id: 31, name: 'VPN allowed phones' } as const;

/** A laptop's record, and a virtual machine's enrolled with the laptop's serial. */
const LAPTOP = { id: 'UDID-LAPTOP-7', serial: 'C02SHARED07', kind: 'computer', jamfId: '7' } as const;
const VM = { id: 'UDID-VM-8', serial: 'C02SHARED07', kind: 'computer', jamfId: '8' } as const;

interface SharedSerialPortal {
  readonly portal: TestPortal;
  readonly jamf: MdmStandIn;
  readonly receiver: string;
  register(identifiers: { serial?: string; mdm_id?: string }): Promise<{ readonly device_id: string }>;
  state(device: { readonly device_id: string }): Promise<string>;
  /** The requests made to Jamf Pro for the records that hold a serial. */
  serialLookups(): string[];
}

async function sharedSerialPortal(t: TestContext): Promise<SharedSerialPortal> {
  const jamf = await MdmStandIn.start();
  t.after(() => jamf.close());
  jamf.devices = [LAPTOP, VM];
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const clientSecretFile = path.join(folder, 'client-secret');
  writeFileSync(clientSecretFile, STAND_IN_CLIENT_SECRET, { mode: 0o600 });
  const allowed = [
    { kind: 'computer', id: ALLOWED_GROUP.id },
    { kind: 'mobileDevice', id: PHONE_GROUP.id },
  ] as const;
  const portal = await startTestPortal({
    config: {
      mdmPush: { jamf: jamfPushOption(folder, [...allowed]) },
      mdmInventory: { ...jamf.jamfConfig(clientSecretFile), interval: 'P1D' },
    },
  });
  t.after(() => portal.close());
  return {
    portal,
    jamf,
    receiver: `${portal.portal.url}/vpn-user-portal/mdm/jamf`,
    register: (identifiers) =>
      portal.admin.registerDevice({ user_id: 'alice', profile_id: 'employees', platform: 'macos', ...identifiers }),
    state: async (device) => (await portal.admin.device(device.device_id)).state,
    serialLookups: () =>
      jamf.requests.filter((request) => request.url.includes('filter=')).map((request) => request.url),
  };
}

test('a virtual machine that shares a suspended laptop registered by its serial alone joins the group without resuming the laptop', async (t) => {
  const { jamf, receiver, register, state, serialLookups } = await sharedSerialPortal(t);
  const laptop = await register({ serial: 'C02SHARED07' });

  // The virtual machine leaves the group: the laptop, found by the serial, loses its tunnels at
  // once, without waiting on Jamf Pro.
  const left = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { removed: [{ jssID: 8, udid: VM.id, serialNumber: VM.serial }] }),
  );
  assert.equal(left.status, 200, JSON.stringify(left.body));
  assert.equal(left.body['suspended'], 1);
  assert.equal(await state(laptop), 'suspended');
  assert.deepEqual(serialLookups(), [], 'a suspension waits on no look-up');

  // It joins again: Jamf Pro holds two records with the serial, so which one the laptop is cannot
  // be told, and it stays suspended.
  const joined = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { added: [{ jssID: 8, udid: VM.id, serialNumber: VM.serial }] }),
  );
  assert.equal(joined.status, 200, JSON.stringify(joined.body));
  assert.equal(joined.body['resumed'], 0);
  assert.equal(joined.body['unknown'], 1);
  assert.equal(await state(laptop), 'suspended', 'a virtual machine joining does not bring the laptop back');
  // Both kinds are asked: a serial a mobile device record held too would be shared as well.
  assert.deepEqual(serialLookups(), [
    `/jamf/api/v1/computers-inventory?section=HARDWARE&sort=id%3Aasc&filter=${encodeURIComponent('hardware.serialNumber=="C02SHARED07"')}&page=0&page-size=200`,
    `/jamf/api/v2/mobile-devices/detail?section=GENERAL&section=HARDWARE&filter=${encodeURIComponent('serialNumber=="C02SHARED07"')}&page=0&page-size=200`,
  ]);

  // The virtual machine's record is deleted in Jamf Pro; the laptop, the one record left with
  // the serial, joins the group and is resumed.
  jamf.devices = [LAPTOP];
  const back = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { added: [{ jssID: 7, udid: LAPTOP.id, serialNumber: LAPTOP.serial }] }),
  );
  assert.equal(back.status, 200, JSON.stringify(back.body));
  assert.equal(back.body['resumed'], 1);
  assert.equal(await state(laptop), 'registered');
});

test("an inventory of a virtual machine that shares a laptop's serial gives the laptop registered by its serial alone no UDID", async (t) => {
  const { portal, jamf, receiver, register } = await sharedSerialPortal(t);
  const laptop = await register({ serial: 'C02SHARED07' });

  const vm = await deliver(receiver, inventoryCompleted({ jssID: 8, udid: VM.id, serialNumber: VM.serial }));
  assert.equal(vm.status, 200, JSON.stringify(vm.body));
  assert.equal(vm.body['refreshed'], 0);
  assert.equal(vm.body['unknown'], 1);
  assert.equal((await portal.admin.device(laptop.device_id)).mdm_id, null, 'not bound to the virtual machine');

  // With the virtual machine's record gone, the laptop's own inventory completes it.
  jamf.devices = [LAPTOP];
  const own = await deliver(receiver, inventoryCompleted({ jssID: 7, udid: LAPTOP.id, serialNumber: LAPTOP.serial }));
  assert.equal(own.body['refreshed'], 1);
  assert.equal((await portal.admin.device(laptop.device_id)).mdm_id, LAPTOP.id);
});

test('Jamf Pro unreadable: a serial-only device joining is a 503 that resumes nothing, and the devices that left are suspended all the same', async (t) => {
  const { jamf, receiver, register, state } = await sharedSerialPortal(t);
  jamf.devices = [LAPTOP, { id: 'UDID-OTHER-9', serial: 'C02OTHER009', kind: 'computer', jamfId: '9' }];
  const laptop = await register({ serial: 'C02SHARED07' });
  const other = await register({ mdm_id: 'UDID-OTHER-9' });
  const earlier = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { removed: [{ jssID: 7, udid: LAPTOP.id, serialNumber: LAPTOP.serial }] }),
  );
  assert.equal(earlier.body['suspended'], 1);

  // One event: the other Mac left, the laptop joined; Jamf Pro's API is down.
  jamf.down = true;
  const change = groupChange('computer', ALLOWED_GROUP, {
    removed: [{ jssID: 9, udid: 'UDID-OTHER-9', serialNumber: 'C02OTHER009' }],
    added: [{ jssID: 7, udid: LAPTOP.id, serialNumber: LAPTOP.serial }],
  });
  const unreadable = await deliver(receiver, change);
  assert.equal(unreadable.status, 503, 'Jamf Pro is to send the event again');
  assert.match(
    String(unreadable.body['error']),
    /could not look up in Jamf Pro the records that hold the serial of a device registered without its UDID \(the device it names that left is suspended/,
  );
  assert.equal(await state(other), 'suspended', 'a device that left loses its tunnels at once');
  assert.equal(await state(laptop), 'suspended', 'nothing is resumed while Jamf Pro cannot be read');

  // Sent again once Jamf Pro can be read: the laptop is the one record with its serial.
  jamf.down = false;
  const again = await deliver(receiver, change);
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(await state(laptop), 'registered');
  assert.equal(await state(other), 'suspended');
});

test('a phone registered by its serial alone is not resumed by a mobile device group while Jamf Pro holds two records with its serial', async (t) => {
  const { portal, jamf, receiver, state, serialLookups } = await sharedSerialPortal(t);
  jamf.devices = [
    { id: 'UDID-PHONE-3', serial: 'F17PHONE003', kind: 'mobile', jamfId: '3' },
    { id: 'UDID-DUPLICATE-4', serial: 'f17phone003', kind: 'mobile', jamfId: '4' },
  ];
  const phone = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'ios',
    serial: 'F17PHONE003',
  });
  const left = await deliver(
    receiver,
    groupChange('mobile', PHONE_GROUP, { removed: [{ jssID: 3, udid: 'UDID-PHONE-3', serialNumber: 'F17PHONE003' }] }),
  );
  assert.equal(left.body['suspended'], 1);

  const joined = await deliver(
    receiver,
    groupChange('mobile', PHONE_GROUP, {
      added: [{ jssID: 4, udid: 'UDID-DUPLICATE-4', serialNumber: 'f17phone003' }],
    }),
  );
  assert.equal(joined.status, 200, JSON.stringify(joined.body));
  assert.equal(joined.body['unknown'], 1);
  assert.equal(await state(phone), 'suspended');
  assert.equal(serialLookups().length, 2);
  assert.match(
    serialLookups()[1] ?? '',
    /^\/jamf\/api\/v2\/mobile-devices\/detail\?section=GENERAL&section=HARDWARE&filter=/,
  );
});

/** A phone's record, and a virtual machine's (a computer record) enrolled with the phone's serial. */
const PHONE = { id: 'UDID-PHONE-5', serial: 'F17PHONE005', kind: 'mobile', jamfId: '5' } as const;
const PHONE_VM = { id: 'UDID-VM-9', serial: 'F17PHONE005', kind: 'computer', jamfId: '9' } as const;

/** A phone of alice's registered by its serial alone, and suspended: its record left the allowed mobile device group. */
async function suspendedPhone(receiver: string, portal: TestPortal): Promise<{ readonly device_id: string }> {
  const phone = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'ios',
    serial: PHONE.serial,
  });
  const left = await deliver(
    receiver,
    groupChange('mobile', PHONE_GROUP, { removed: [{ jssID: 5, udid: PHONE.id, serialNumber: PHONE.serial }] }),
  );
  assert.equal(left.body['suspended'], 1);
  assert.equal((await portal.admin.device(phone.device_id)).state, 'suspended');
  return phone;
}

test("a virtual machine enrolled with a suspended phone's serial neither resumes the phone by joining a computer group nor binds it by its inventory", async (t) => {
  const { portal, jamf, receiver, state, serialLookups } = await sharedSerialPortal(t);
  jamf.devices = [PHONE, PHONE_VM];
  const phone = await suspendedPhone(receiver, portal);

  // The virtual machine joins the allowed computer group: a computer is no phone.
  const joined = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { added: [{ jssID: 9, udid: PHONE_VM.id, serialNumber: PHONE_VM.serial }] }),
  );
  assert.equal(joined.status, 200, JSON.stringify(joined.body));
  assert.equal(joined.body['resumed'], 0);
  assert.equal(joined.body['unknown'], 1);
  assert.equal(await state(phone), 'suspended', 'a computer joining its group does not bring the phone back');
  assert.deepEqual(serialLookups(), [], 'refused for its kind before Jamf Pro is asked');

  // Its inventory gives the phone nothing: were it bound to the virtual machine's UDID, the
  // virtual machine's group would decide the phone's state from then on.
  const inventory = await deliver(
    receiver,
    inventoryCompleted({ jssID: 9, udid: PHONE_VM.id, serialNumber: PHONE_VM.serial }),
  );
  assert.equal(inventory.status, 200, JSON.stringify(inventory.body));
  assert.equal(inventory.body['refreshed'], 0);
  assert.equal(inventory.body['unknown'], 1);
  assert.equal((await portal.admin.device(phone.device_id)).mdm_id, null, 'not bound to the virtual machine');

  // The phone's own record joins its group, but Jamf Pro holds a computer record with its serial
  // too (the phone could be registered with the wrong platform): which one it is cannot be told.
  const own = groupChange('mobile', PHONE_GROUP, { added: [{ jssID: 5, udid: PHONE.id, serialNumber: PHONE.serial }] });
  const shared = await deliver(receiver, own);
  assert.equal(shared.status, 200, JSON.stringify(shared.body));
  assert.equal(shared.body['resumed'], 0);
  assert.equal(shared.body['unknown'], 1);
  assert.equal(await state(phone), 'suspended', 'a serial held by records of both kinds is shared');
  assert.equal(serialLookups().length, 2, 'both the computers and the mobile devices are asked');

  // With the virtual machine's record deleted in Jamf Pro, the phone's own "joined" resumes it.
  jamf.devices = [PHONE];
  const back = await deliver(receiver, own);
  assert.equal(back.status, 200, JSON.stringify(back.body));
  assert.equal(back.body['resumed'], 1);
  assert.equal(await state(phone), 'registered');
});

test("without mdmInventory of Jamf Pro a virtual machine enrolled with a suspended phone's serial still neither resumes nor binds the phone", async (t) => {
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const allowed = [
    { kind: 'computer', id: ALLOWED_GROUP.id },
    { kind: 'mobileDevice', id: PHONE_GROUP.id },
  ] as const;
  const portal = await startTestPortal({ config: { mdmPush: { jamf: jamfPushOption(folder, [...allowed]) } } });
  t.after(() => portal.close());
  const receiver = `${portal.portal.url}/vpn-user-portal/mdm/jamf`;
  const phone = await suspendedPhone(receiver, portal);

  const vm = { jssID: 9, udid: PHONE_VM.id, serialNumber: PHONE_VM.serial };
  const joined = await deliver(receiver, groupChange('computer', ALLOWED_GROUP, { added: [vm] }));
  assert.equal(joined.status, 200, JSON.stringify(joined.body));
  assert.equal(joined.body['resumed'], 0);
  assert.equal((await portal.admin.device(phone.device_id)).state, 'suspended');
  const inventory = await deliver(receiver, inventoryCompleted(vm));
  assert.equal(inventory.body['refreshed'], 0);
  assert.equal((await portal.admin.device(phone.device_id)).mdm_id, null);

  // A "left" of the virtual machine still takes the phone found by the serial: the platform is
  // what the registration says, and a revocation errs on the side of the tunnel going. The
  // phone's own record joining its group brings it back.
  await deliver(
    receiver,
    groupChange('mobile', PHONE_GROUP, { added: [{ jssID: 5, udid: PHONE.id, serialNumber: PHONE.serial }] }),
  );
  assert.equal((await portal.admin.device(phone.device_id)).state, 'registered');
  const vmLeft = await deliver(receiver, groupChange('computer', ALLOWED_GROUP, { removed: [vm] }));
  assert.equal(vmLeft.body['suspended'], 1);
  assert.equal((await portal.admin.device(phone.device_id)).suspension?.reason, 'jamf-group');
});
