// A device registered with its UDID or serial in mixed case (as another tool wrote it) is the
// device Jamf Pro names in capitals or small letters: leaving the group suspends it, joining
// resumes it. Two devices registered with identifiers that differ only in case (before
// registration refused that) cannot be told apart: a "left" naming that identifier suspends
// both (a revocation errs on the side of the tunnel going), and a "joined" resumes neither. Nor
// does Jamf Pro's inventory make two such devices by completing one's identifiers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ALLOWED_GROUP,
  deliver,
  groupChange,
  inventoryCompleted,
  startJamfReceiverPortal,
} from '../../support/jamf-webhooks.js';

test('a device registered with a mixed-case UDID or serial follows the group whatever case Jamf Pro names it in', async (t) => {
  const { receiver, register, state } = await startJamfReceiverPortal(t);
  const byUdid = await register({ mdm_id: '8a1B2c3D-4e5F-6a7B-8c9D-0e1F2a3B4c5D' });
  const bySerial = await register({ serial: 'C02mIxEd001' });

  const left = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, {
      removed: [
        { jssID: 1, udid: '8A1B2C3D-4E5F-6A7B-8C9D-0E1F2A3B4C5D' },
        { jssID: 2, udid: 'UDID-NOT-REGISTERED-2', serialNumber: 'C02MIXED001' },
      ],
    }),
  );
  assert.equal(left.status, 200, JSON.stringify(left.body));
  assert.equal(left.body['unknown'], 0);
  assert.equal(left.body['suspended'], 2);
  assert.equal(await state(byUdid), 'suspended', 'a mixed-case UDID named in capitals loses its tunnels');
  assert.equal(await state(bySerial), 'suspended', 'a mixed-case serial named in capitals loses its tunnels');

  const joined = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, {
      added: [
        { jssID: 1, udid: '8a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d' },
        { jssID: 2, serialNumber: 'c02mixed001' },
      ],
    }),
  );
  assert.equal(joined.body['resumed'], 2);
  assert.equal(await state(byUdid), 'registered');
  assert.equal(await state(bySerial), 'registered');
});

test('two devices whose UDIDs differ only in letter case are both suspended by a "left", and neither resumed by a "joined"', async (t) => {
  const { portal, receiver, register, state } = await startJamfReceiverPortal(t);
  const lower = await register({ mdm_id: 'udid-twice-9a' });
  // Registration now refuses the second; devices registered before it did may be so.
  const mixed = await register({ mdm_id: 'udid-twice-9b' });
  await portal.portal.ctx.db
    .updateTable('devices')
    .set({ mdm_id: 'Udid-Twice-9A' })
    .where('device_id', '=', mixed.device_id)
    .execute();

  const left = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { removed: [{ jssID: 9, udid: 'UDID-TWICE-9A' }] }),
  );
  assert.equal(left.body['suspended'], 2);
  assert.equal(await state(lower), 'suspended');
  assert.equal(await state(mixed), 'suspended');

  const joined = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { added: [{ jssID: 9, udid: 'UDID-TWICE-9A' }] }),
  );
  assert.equal(joined.body['resumed'], 0);
  assert.equal(joined.body['unknown'], 1);
  assert.equal(await state(lower), 'suspended', 'which of the two joined cannot be told');
  assert.equal(await state(mixed), 'suspended');

  // Named exactly as one of them is registered, that one is meant.
  const exact = await deliver(
    receiver,
    groupChange('computer', ALLOWED_GROUP, { added: [{ jssID: 9, udid: 'Udid-Twice-9A' }] }),
  );
  assert.equal(exact.body['resumed'], 1);
  assert.equal(await state(mixed), 'registered');
  assert.equal(await state(lower), 'suspended');
});

test('an inventory does not give a device a serial another live device holds in another letter case', async (t) => {
  const { portal, receiver, register } = await startJamfReceiverPortal(t);
  const byUdid = await register({ mdm_id: 'UDID-FILL-1' });
  await register({ serial: 'C02FILL001' });

  const inventory = await deliver(
    receiver,
    inventoryCompleted({ jssID: 5, udid: 'UDID-FILL-1', serialNumber: 'c02fill001' }),
  );
  assert.equal(inventory.status, 200, JSON.stringify(inventory.body));
  assert.equal(inventory.body['refreshed'], 0);
  assert.equal(
    (await portal.admin.device(byUdid.device_id)).serial,
    null,
    "the serial is the other device's, letter case aside: two devices holding it could not be told apart",
  );
});
