// A smart group change that names some devices by their UDID and others by their Jamf id alone,
// delivered while Jamf Pro's API cannot be read (so the ids cannot be looked up): the devices it
// names by UDID or serial among those that left lose their tunnels at once, as they would in any
// other delivery, rather than waiting for Jamf Pro to send the event again. Nothing is resumed:
// a device named by its id alone among those that left may be one named among those that joined.
// The delivery is answered 503, so that Jamf Pro sends it again; sent again once Jamf Pro can be
// read, it does the rest.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ALLOWED_GROUP, deliver, groupChange, jamfPushOption, secretsFolder } from '../../support/jamf-webhooks.js';
import { MdmStandIn, STAND_IN_CLIENT_SECRET } from '../../support/mdm-stand-in.js';
import { startTestPortal } from '../../support/test-portal.js';

test('Jamf Pro unreadable during a group change: the devices it names that left are suspended at once, none is resumed, and the delivery sent again does the rest', async (t) => {
  const jamf = await MdmStandIn.start();
  t.after(() => jamf.close());
  jamf.devices = [
    { id: 'UDID-LEFT-41', serial: 'C02DOWN0041', kind: 'computer', jamfId: '41' },
    { id: 'UDID-BYID-42', serial: 'C02DOWN0042', kind: 'computer', jamfId: '42' },
    { id: 'UDID-BACK-43', serial: 'C02DOWN0043', kind: 'computer', jamfId: '43' },
  ];
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const clientSecretFile = path.join(folder, 'client-secret');
  writeFileSync(clientSecretFile, STAND_IN_CLIENT_SECRET, { mode: 0o600 });
  const portal = await startTestPortal({
    config: {
      mdmPush: { jamf: jamfPushOption(folder, [{ kind: 'computer', id: ALLOWED_GROUP.id }]) },
      mdmInventory: { ...jamf.jamfConfig(clientSecretFile), interval: 'P1D' },
    },
  });
  t.after(() => portal.close());
  const receiver = `${portal.portal.url}/vpn-user-portal/mdm/jamf`;
  const register = (identifiers: { serial?: string; mdm_id?: string }) =>
    portal.admin.registerDevice({ user_id: 'alice', profile_id: 'employees', platform: 'macos', ...identifiers });
  const leaving = await register({ mdm_id: 'UDID-LEFT-41' });
  const byId = await register({ serial: 'C02DOWN0042' });
  const back = await register({ mdm_id: 'UDID-BACK-43' });
  const state = async (device: { readonly device_id: string }) => (await portal.admin.device(device.device_id)).state;

  // The third Mac left the group earlier.
  const earlier = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { removed: [{ jssID: 43, udid: 'UDID-BACK-43' }] }),
  );
  assert.equal(earlier.body['suspended'], 1);

  // Now one event: the first Mac left (named with its UDID), the second left (Jamf id 42 alone),
  // the third joined again. Jamf Pro's API is down, so 42 cannot be looked up.
  const change = groupChange('computer', ALLOWED_GROUP, {
    removed: [{ jssID: 41, udid: 'UDID-LEFT-41' }],
    added: [{ jssID: 43, udid: 'UDID-BACK-43' }],
  }) as { event: { groupRemovedDevicesIds: number[] } };
  change.event.groupRemovedDevicesIds.push(42);
  jamf.down = true;
  const unreadable = await deliver(receiver, change);
  assert.equal(unreadable.status, 503, 'Jamf Pro is to send the event again');
  assert.match(
    String(unreadable.body['error']),
    /could not look up in Jamf Pro the devices the event names by Jamf id only/,
  );
  assert.equal(await state(leaving), 'suspended', 'a device the event names that left loses its tunnels at once');
  assert.equal(await state(byId), 'registered', 'a device named by its Jamf id alone cannot be found yet');
  assert.equal(await state(back), 'suspended', 'nothing is resumed while a device that left is not known');

  // Jamf Pro sends it again, and can be read now.
  jamf.down = false;
  const again = await deliver(receiver, change);
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.equal(await state(leaving), 'suspended');
  assert.equal(await state(byId), 'suspended');
  assert.equal(await state(back), 'registered');
});
