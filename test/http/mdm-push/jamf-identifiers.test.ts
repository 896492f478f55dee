// What Jamf Pro names a device by (UDID, serial) reaches the database only when a device could be
// registered with it: one holding a space or over 255 characters names no device, on either
// database, and the delivery still applies to every device it names well. A NUL or a lone
// surrogate (text no database stores as sent) in an identifier, or in a field the portal does not
// read such as the device's name, refuses only that identifier, never the delivery.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ALLOWED_GROUP,
  deliver,
  groupChange,
  inventoryCompleted,
  startJamfReceiverPortal,
} from '../../support/jamf-webhooks.js';

test('a UDID or serial no device can hold names no device, and the rest of the delivery still applies', async (t) => {
  const { portal, receiver, register } = await startJamfReceiverPortal(t);
  const laptop = await register({ serial: 'C02GOOD001', mdm_id: 'UDID-GOOD-1' });
  const bySerial = await register({ serial: 'C02SERIAL2' });

  // The group loses records whose identifiers no device could hold, and the laptop, whose user
  // named it with a NUL.
  const change = groupChange('computer', ALLOWED_GROUP, {
    removed: [
      { jssID: 51, udid: 'UDID WITH SPACE', serialNumber: 'X'.repeat(256) },
      { jssID: 54, udid: 'UDID-\u0000GOOD-1', serialNumber: 'C02\uD800' },
      { jssID: 52, udid: 'UDID-GOOD-1', serialNumber: 'C02GOOD001' },
    ],
  });
  const body = JSON.parse(JSON.stringify(change).replaceAll('"device 52"', '"Alice\\u0000s Mac"')) as unknown;
  assert.match(JSON.stringify(body), /Alice\\u0000s Mac/);
  const left = await deliver(receiver, body);
  assert.equal(left.status, 200, JSON.stringify(left.body));
  assert.equal(left.body['suspended'], 1);
  assert.equal(left.body['unknown'], 2);
  assert.equal((await portal.admin.device(laptop.device_id)).state, 'suspended');

  // An inventory naming the serial-only device with such a UDID gives it nothing.
  const inventory = await deliver(
    receiver,
    inventoryCompleted({ jssID: 53, udid: 'UDID WITH SPACE', serialNumber: 'C02SERIAL2' }),
  );
  assert.equal(inventory.status, 200, JSON.stringify(inventory.body));
  assert.equal((await portal.admin.device(bySerial.device_id)).mdm_id, null);
});
