// The devices table's own rules under concurrency: an MDM identifier is unique among live
// devices, and two deliveries that would give the same one to two devices at once (Jamf Pro
// sends its events in parallel) give it to one and leave the other as it was, without an error.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asDeviceId } from '../../src/shared/ids.js';
import { fillDeviceIdentifier, findDevice } from '../../src/storage/devices.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

let portal: TestPortal;

before(async () => {
  portal = await startTestPortal();
});
after(() => portal.close());

test('two devices given the same MDM id at once: one gets it, the other is left as it was, nothing fails', async () => {
  const register = async (serial: string) =>
    asDeviceId(
      (await portal.admin.registerDevice({ user_id: 'ann', profile_id: 'employees', platform: 'macos', serial }))
        .device_id,
    );
  const db = portal.portal.ctx.db;
  for (let round = 0; round < 5; round++) {
    const first = await register(`RACE-A-${round}`);
    const second = await register(`RACE-B-${round}`);
    const udid = `00008103-RACE-${round}`;
    const results = await Promise.all([
      fillDeviceIdentifier(db, first, 'mdm_id', udid),
      fillDeviceIdentifier(db, second, 'mdm_id', udid),
    ]);
    assert.deepEqual(results.toSorted(), [false, true], `round ${round}: exactly one of the two got the id`);
    const holders = [await findDevice(db, first), await findDevice(db, second)].filter(
      (device) => device?.mdmId === udid,
    );
    assert.equal(holders.length, 1);
  }
});
