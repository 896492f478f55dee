// Two portal instances on one database each run the MDM inventory pass, and nothing makes them
// take turns. A device is retired only when two readings in a row miss it, because one reading
// can skip a device that is there: two readings made at the same moment are one reading twice,
// and skip it together. The pass whose reading ends last must not count the other's miss, noted
// while its own reading was under way, as the reading before, nor note its skip again over a
// later reading's finding.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { asDeviceId, type DeviceId } from '../../../src/shared/ids.js';
import { MdmStandIn } from '../../support/mdm-stand-in.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { SlowInventoryReading } from '../../support/slow-inventory-reading.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

describe('the inventory pass on two portal instances reading at the same moment', () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  let otherReading: SlowInventoryReading;
  const clock = shiftedClock();
  const ids = new Map<string, DeviceId>();

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.jsonAnswer = ['SAME-1', 'SAME-2', 'SAME-3'];
    otherReading = await SlowInventoryReading.start(mdm);
    portal = await startTestPortal({
      clock,
      config: { mdmInventory: { ...mdm.jsonConfig(), interval: 'P1D', maxRetirePerPass: 1 } },
    });
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    // The pass the portal runs at start ends first.
    await schedule.runNow();
    for (const [index, serial] of ['SAME-1', 'SAME-2', 'SAME-3'].entries()) {
      const registered = await portal.admin.registerDevice({
        user_id: `user${index}`,
        profile_id: 'employees',
        platform: 'macos',
        serial,
      });
      ids.set(serial, asDeviceId(registered.device_id));
    }
    // Past the margin after a registration: every device is compared.
    clock.advance(2000);
  });

  after(async () => {
    await otherReading?.close();
    await portal?.close();
    await mdm?.close();
  });

  test('a device both readings of one moment skipped is missed once, not retired', async () => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    // For a moment the MDM's answer lacks SAME-2 (a page whose offsets shifted): the other
    // instance reads it now, and is slow to finish. Its clock runs a second ahead, so its
    // reading counts as the later of the two, and is applied when it ends.
    mdm.jsonAnswer = ['SAME-1', 'SAME-3'];
    const otherInstance = await otherReading.otherInstancePass({
      ...portal.portal.ctx,
      clock: { now: () => new Date(clock.now().getTime() + 1000) },
    });
    // This instance reads the same moment and notes the miss.
    const first = await schedule.runNow();
    assert.ok(first.outcome === 'retired', first.outcome);
    assert.deepEqual(
      first.missed.map((device) => device.deviceId),
      [ids.get('SAME-2')],
    );
    assert.deepEqual(first.retired, []);
    // The moment passes: SAME-2 is listed again. Then the other instance's reading of that moment ends.
    mdm.jsonAnswer = ['SAME-1', 'SAME-2', 'SAME-3'];
    otherReading.release();
    const other = await otherInstance.done;
    assert.ok(other.outcome === 'retired', other.outcome);
    assert.deepEqual(other.retired, [], 'a reading made while the miss was noted is not the reading after it');
    assert.equal((await portal.admin.device(ids.get('SAME-2') ?? '')).state, 'registered');
    // A reading after both finds it: nothing is missed any more.
    clock.advance(2000);
    const after = await schedule.runNow();
    assert.ok(after.outcome === 'retired', after.outcome);
    assert.deepEqual(after.missed, []);
    assert.deepEqual(after.gone, []);
    assert.equal((await portal.admin.device(ids.get('SAME-2') ?? '')).state, 'registered');
  });

  test('a slow reading that ends last does not note a miss again over a later reading that found the device', async () => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    // The other instance reads while the MDM's answer lacks SAME-2, and is slow to finish.
    mdm.jsonAnswer = ['SAME-1', 'SAME-3'];
    const otherInstance = await otherReading.otherInstancePass(portal.portal.ctx);
    // A second later this instance reads SAME-2 listed again, and ends first.
    clock.advance(1000);
    mdm.jsonAnswer = ['SAME-1', 'SAME-2', 'SAME-3'];
    const later = await schedule.runNow();
    assert.ok(later.outcome === 'retired', later.outcome);
    assert.deepEqual(later.missed, []);
    // The slow reading ends: its skip is older than the finding.
    otherReading.release();
    const slow = await otherInstance.done;
    assert.equal(slow.outcome, 'superseded');
    // SAME-2 is skipped once more: a first miss since it was found, noted and not retired.
    clock.advance(1000);
    mdm.jsonAnswer = ['SAME-1', 'SAME-3'];
    const next = await schedule.runNow();
    assert.ok(next.outcome === 'retired', next.outcome);
    assert.deepEqual(next.retired, [], 'found in between, the device was missed by one reading, not two in a row');
    assert.deepEqual(
      next.missed.map((device) => device.deviceId),
      [ids.get('SAME-2')],
    );
    assert.equal((await portal.admin.device(ids.get('SAME-2') ?? '')).state, 'registered');
    mdm.jsonAnswer = ['SAME-1', 'SAME-2', 'SAME-3'];
    clock.advance(1000);
    const found = await schedule.runNow();
    assert.ok(found.outcome === 'retired', found.outcome);
    assert.deepEqual(found.missed, []);
  });

  test('a reading noted by an instance whose clock ran a year ahead holds no later pass back', async () => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    const year = 365 * 24 * 3600_000;
    clock.advance(year);
    assert.equal((await schedule.runNow()).outcome, 'retired');
    // The clock is set right again; SAME-2 is skipped for a moment.
    clock.advance(-year + 1000);
    mdm.jsonAnswer = ['SAME-1', 'SAME-3'];
    const skipped = await schedule.runNow();
    assert.equal(skipped.outcome, 'retired', 'a time noted far ahead of this clock is a clock set wrong');
    assert.ok(skipped.outcome === 'retired');
    assert.deepEqual(
      skipped.missed.map((device) => device.deviceId),
      [ids.get('SAME-2')],
    );
    mdm.jsonAnswer = ['SAME-1', 'SAME-2', 'SAME-3'];
    clock.advance(1000);
    const found = await schedule.runNow();
    assert.ok(found.outcome === 'retired', found.outcome);
    assert.deepEqual(found.missed, []);
  });
});
