// Two portal instances on one database each run the MDM inventory pass, and nothing makes them
// take turns. A device is retired only when two readings in a row miss it, because one reading
// can skip a device that is there: two readings made at the same moment are one reading twice,
// and skip it together. The pass whose reading ends last must not count the other's miss, noted
// while its own reading was under way, as the reading before.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { MdmInventoryConfig } from '../../../src/config/portal-config.js';
import { syncWithMdmInventory } from '../../../src/core/devices/index.js';
import { asDeviceId, type DeviceId } from '../../../src/shared/ids.js';
import { MdmStandIn } from '../../support/mdm-stand-in.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

describe('the inventory pass on two portal instances reading at the same moment', () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  let gate: Server;
  let gateUrl: string;
  let release: () => void = () => {};
  let requested: () => void = () => {};
  const clock = shiftedClock();
  const ids = new Map<string, DeviceId>();

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.jsonAnswer = ['SAME-1', 'SAME-2', 'SAME-3'];
    // The other instance's reading: the inventory as it was when its read began, answered later.
    gate = createServer((request, response) => {
      void (async () => {
        const snapshot = await (
          await fetch(`${mdm.url}/inventory.json`, { headers: { authorization: request.headers.authorization ?? '' } })
        ).text();
        requested();
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        response.writeHead(200, { 'content-type': 'application/json' }).end(snapshot);
      })();
    });
    await new Promise<void>((resolve) => gate.listen(0, '127.0.0.1', resolve));
    const address = gate.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    gateUrl = `http://127.0.0.1:${address.port}/inventory.json`;
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
    release();
    await portal?.close();
    await mdm?.close();
    gate?.closeAllConnections();
    await new Promise<void>((resolve) => gate?.close(() => resolve()));
  });

  test('a device both readings of one moment skipped is missed once, not retired', async () => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    const config = portal.portal.ctx.config.mdmInventory as MdmInventoryConfig;
    assert.ok(config.source.provider === 'json');
    // For a moment the MDM's answer lacks SAME-2 (a page whose offsets shifted): the other
    // instance reads it now, and is slow to finish.
    mdm.jsonAnswer = ['SAME-1', 'SAME-3'];
    const reachedGate = new Promise<void>((resolve) => {
      requested = resolve;
    });
    const otherInstance = syncWithMdmInventory(portal.portal.ctx, {
      ...config,
      source: { ...config.source, url: gateUrl },
    });
    await reachedGate;
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
    release();
    const other = await otherInstance;
    assert.ok(other.outcome === 'retired', other.outcome);
    assert.deepEqual(other.retired, [], 'a reading made while the miss was noted is not the reading after it');
    assert.equal((await portal.admin.device(ids.get('SAME-2') ?? '')).state, 'registered');
    // A reading after both finds it: nothing is missed any more.
    const after = await schedule.runNow();
    assert.ok(after.outcome === 'retired', after.outcome);
    assert.deepEqual(after.missed, []);
    assert.deepEqual(after.gone, []);
    assert.equal((await portal.admin.device(ids.get('SAME-2') ?? '')).state, 'registered');
  });
});
