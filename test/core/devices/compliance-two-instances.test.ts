// Two portal instances on one database each run the MDM inventory pass (nothing makes them take
// turns). A pass reads the inventory first and the devices' states after: one whose (long, paged)
// read began while a device was still compliant must not resume that device once the other
// instance's later reading has suspended it as noncompliant.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { MdmInventoryConfig } from '../../../src/config/portal-config.js';
import { syncWithMdmInventory } from '../../../src/core/devices/index.js';
import { asDeviceId, type DeviceId } from '../../../src/shared/ids.js';
import { MdmStandIn } from '../../support/mdm-stand-in.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

describe('the inventory pass on two portal instances', () => {
  let mdm: MdmStandIn;
  let portal: TestPortal;
  let gate: Server;
  let gateUrl: string;
  let release: () => void = () => {};
  let requested: () => void = () => {};
  const clock = shiftedClock();
  let deviceId: DeviceId;

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.jsonAnswer = [{ serial: 'TWO-1', compliant: true }];
    // The slow reading of the other instance: the inventory as it was when its read began, answered later.
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
    release();
    await portal?.close();
    await mdm?.close();
    gate?.closeAllConnections();
    await new Promise<void>((resolve) => gate?.close(() => resolve()));
  });

  test('a pass that read "compliant" before the other instance suspended the device as noncompliant does not resume it', async () => {
    const schedule = portal.portal.mdmInventory;
    assert.ok(schedule !== null);
    // Compliant: the other instance starts its (slow) read now.
    assert.equal((await portal.admin.device(deviceId)).state, 'registered');
    const config = portal.portal.ctx.config.mdmInventory as MdmInventoryConfig;
    assert.ok(config.source.provider === 'json');
    const reachedGate = new Promise<void>((resolve) => {
      requested = resolve;
    });
    const otherInstance = syncWithMdmInventory(portal.portal.ctx, {
      ...config,
      source: { ...config.source, url: gateUrl },
    });
    await reachedGate;
    // The device falls out of compliance: this instance's pass suspends it.
    mdm.jsonAnswer = [{ serial: 'TWO-1', compliant: false }];
    await schedule.runNow();
    assert.equal((await portal.admin.device(deviceId)).state, 'suspended');
    // Now the other instance's reading, older than that suspension, arrives.
    release();
    await otherInstance;
    const device = await portal.admin.device(deviceId);
    assert.equal(
      device.state,
      'suspended',
      'the MDM says noncompliant now: a reading from before the suspension must not resume the device',
    );
  });
});
