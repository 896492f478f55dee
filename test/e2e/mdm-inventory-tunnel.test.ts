// Devices that leave the MDM lose their tunnel, with the real tools: a device
// registered with the portal and present in the MDM's inventory (a local stand-in of Microsoft
// Graph, since the real one cannot be reached) brings its file up with wg-quick on wireguard-go
// and pings the node; once it is removed from the inventory it is retired by the second pass that
// misses it (within two intervals) and its ping fails.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MdmStandIn, STAND_IN_CLIENT_SECRET } from '../support/mdm-stand-in.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';

const WG_QUICK_ENV = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };
const INTERVAL_S = 2;
const FLEET = ['LAB-MDM-1', 'LAB-MDM-2', 'LAB-MDM-3'].map((serial, index) => ({
  id: `cccccccc-0000-0000-0000-00000000000${index}`,
  serial,
}));

describe("a device removed from the MDM's inventory loses its tunnel on a real node", () => {
  let mdm: MdmStandIn;
  let lab: TunnelLab;
  let directory: string;

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.devices = [...FLEET];
    directory = mkdtempSync(path.join(tmpdir(), 'mdm-lab-'));
    const secretFile = path.join(directory, 'intune-secret');
    writeFileSync(secretFile, STAND_IN_CLIENT_SECRET, { mode: 0o600 });
    lab = await startTunnelLab({
      portalConfig: {
        reconcileInterval: 'PT3S',
        mdmInventory: { ...mdm.intuneConfig(secretFile), interval: `PT${INTERVAL_S}S`, maxRetirePerPass: 1 },
      },
    });
    await lab.portal.reconcile();
  });

  after(async () => {
    await lab?.close();
    await mdm?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  test('the device is retired within two intervals and its ping fails', async () => {
    for (const [index, device] of FLEET.entries()) {
      await lab.portal.admin.registerDevice({
        user_id: `user${index}`,
        profile_id: LAB_PROFILE,
        platform: 'linux',
        serial: device.serial,
      });
    }
    const device = (await lab.portal.admin.devices({ serial: 'LAB-MDM-1' })).devices[0];
    assert.ok(device !== undefined);
    const created = await lab.portal.post(
      '/create',
      { user_id: 'user0', profile_id: LAB_PROFILE, device_id: device.device_id },
      { accept: 'application/x-wireguard-profile' },
    );
    assert.equal(created.status, 200, created.text);
    const interfaceName = lab.lab.interfaceName('wgc');
    const file = path.join(lab.directory, `${interfaceName}.conf`);
    await writeFile(file, created.text, { mode: 0o600 });
    await lab.client.exec('wg-quick', ['up', file], { env: WG_QUICK_ENV });
    assert.ok(await lab.ping(20), 'the tunnel works');
    // A few passes with the device in the inventory: it stays.
    await new Promise((resolve) => setTimeout(resolve, 2 * INTERVAL_S * 1000));
    assert.equal((await lab.portal.admin.device(device.device_id)).state, 'active');
    assert.ok(await lab.ping(5));

    mdm.devices = FLEET.filter((entry) => entry.serial !== 'LAB-MDM-1');
    const { failed, afterMs } = await lab.untilPingFails((2 * INTERVAL_S + 10) * 1000);
    assert.ok(failed, `the ping still passed ${Math.round(afterMs / 1000)} s after the removal`);
    assert.equal((await lab.portal.admin.device(device.device_id)).state, 'retired');
    for (const serial of ['LAB-MDM-2', 'LAB-MDM-3'])
      assert.equal((await lab.portal.admin.devices({ serial })).devices[0]?.state, 'registered');
    await lab.client.exec('wg-quick', ['down', file], { env: WG_QUICK_ENV });
  });
});
