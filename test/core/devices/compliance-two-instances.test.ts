// Two portal instances on one database each run the MDM inventory pass (nothing makes them take
// turns). A pass reads the inventory first and the devices' states after: one whose (long, paged)
// read began while a device was still compliant must not resume that device once the other
// instance's later reading has suspended it as noncompliant, nor suspend it once a later reading
// found it compliant again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { asDeviceId, type DeviceId } from '../../../src/shared/ids.js';
import { MdmStandIn } from '../../support/mdm-stand-in.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { SlowInventoryReading } from '../../support/slow-inventory-reading.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

describe('the inventory pass on two portal instances', () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  let otherReading: SlowInventoryReading;
  const clock = shiftedClock();
  let deviceId: DeviceId;

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.jsonAnswer = [{ serial: 'TWO-1', compliant: true }];
    otherReading = await SlowInventoryReading.start(mdm);
    portal = await startTestPortal({
      clock,
      config: {
        mdmInventory: {
          ...mdm.jsonConfig(),
          interval: 'P1D',
          maxRetirePerPass: 1,
          compliance: { maxSuspendPerPass: 1 },
        },
      },
    });
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    await schedule.runNow();
    const registered = await portal.admin.registerDevice({
      user_id: 'alice',
      profile_id: 'employees',
      platform: 'macos',
      serial: 'TWO-1',
    });
    deviceId = asDeviceId(registered.device_id);
    clock.advance(2000);
  });

  after(async () => {
    await otherReading?.close();
    await portal?.close();
    await mdm?.close();
  });

  test('a pass that read "compliant" before the other instance suspended the device as noncompliant does not resume it', async () => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    // Compliant: the other instance starts its (slow) read now.
    assert.equal((await portal.admin.device(deviceId)).state, 'registered');
    const otherInstance = await otherReading.otherInstancePass(portal.portal.ctx);
    // The device falls out of compliance: this instance's pass suspends it.
    mdm.jsonAnswer = [{ serial: 'TWO-1', compliant: false }];
    await schedule.runNow();
    assert.equal((await portal.admin.device(deviceId)).state, 'suspended');
    // Now the other instance's reading, older than that suspension, arrives.
    otherReading.release();
    await otherInstance.done;
    const device = await portal.admin.device(deviceId);
    assert.equal(
      device.state,
      'suspended',
      'the MDM says noncompliant now: a reading from before the suspension must not resume the device',
    );
  });

  test('a pass that read "noncompliant" before the other instance found the device compliant again does not suspend it', async () => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    mdm.jsonAnswer = [{ serial: 'TWO-1', compliant: true }];
    await schedule.runNow();
    assert.equal((await portal.admin.device(deviceId)).state, 'registered');
    // The device falls out of compliance for a moment: the other instance's slow read takes that moment.
    mdm.jsonAnswer = [{ serial: 'TWO-1', compliant: false }];
    const otherInstance = await otherReading.otherInstancePass(portal.portal.ctx);
    // Compliant again a second later: this instance reads that, and leaves the device on.
    clock.advance(1000);
    mdm.jsonAnswer = [{ serial: 'TWO-1', compliant: true }];
    await schedule.runNow();
    otherReading.release();
    await otherInstance.done;
    assert.equal(
      (await portal.admin.device(deviceId)).state,
      'registered',
      'a reading older than one applied already must not suspend the device the later one found compliant',
    );
  });
});
