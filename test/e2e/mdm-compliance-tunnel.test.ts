// A device the MDM finds out of compliance loses its tunnel on a real node, and gets it back once
// compliant: the portal reads a local stand-in of Microsoft Graph (the real one cannot be reached)
// every two seconds; the device's file is up with wg-quick on wireguard-go in the client's
// namespace. Noncompliant → the peer leaves the node and no traffic passes; compliant again → the
// peer is back and the same tunnel works again, without issuing anything new.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DeviceInfo } from '../../src/protocol/admin-api.js';
import { MdmStandIn, STAND_IN_CLIENT_SECRET } from '../support/mdm-stand-in.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

const WG_QUICK_ENV = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };
const FLEET = ['LAB-CMP-1', 'LAB-CMP-2', 'LAB-CMP-3'].map((serial, index) => ({
  id: `eeeeeeee-0000-0000-0000-00000000000${index}`,
  serial,
}));

describe('a noncompliant device loses its tunnel on a real node and gets it back once compliant', () => {
  let mdm: MdmStandIn;
  let lab: TunnelLab;
  let directory: string;
  let device: DeviceInfo;
  let deviceKey = '';

  const setCompliance = (complianceState: string) => {
    mdm.devices = FLEET.map((entry) => (entry.serial === 'LAB-CMP-1' ? { ...entry, complianceState } : entry));
  };
  const state = async () => (await lab.portal.admin.device(device.device_id)).state;

  before(async () => {
    mdm = await MdmStandIn.start();
    mdm.devices = [...FLEET];
    directory = mkdtempSync(path.join(tmpdir(), 'mdm-compliance-lab-'));
    const secretFile = path.join(directory, 'intune-secret');
    writeFileSync(secretFile, STAND_IN_CLIENT_SECRET, { mode: 0o600 });
    lab = await startTunnelLab({
      portalConfig: {
        reconcileInterval: 'PT1H',
        mdmInventory: {
          ...mdm.intuneConfig(secretFile),
          interval: 'PT2S',
          maxRetirePerPass: 1,
          compliance: { maxSuspendPerPass: 1 },
        },
      },
    });
    await lab.portal.reconcile();
    for (const [index, entry] of FLEET.entries()) {
      const registered = await lab.portal.admin.registerDevice({
        user_id: `user${index}`,
        profile_id: LAB_PROFILE,
        platform: 'linux',
        serial: entry.serial,
      });
      if (index === 0) device = registered;
    }
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
    deviceKey = (await lab.client.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim();
  });

  after(async () => {
    await lab?.close();
    await mdm?.close();
    rmSync(directory, { recursive: true, force: true });
  });

  test('compliant: the tunnel works, and passes that compare the device leave it on', async () => {
    assert.ok(await lab.ping(20), 'the tunnel works');
    const requests = mdm.requests.length;
    // Two passes after the registration's margin: the device has been compared and kept.
    await until('two more passes', async () => mdm.requests.length >= requests + 2 * 3, 15_000);
    assert.equal(await state(), 'active');
    assert.ok((await lab.peersOnNode()).has(deviceKey));
  });

  test('noncompliant: the device is suspended, its peer leaves the node and no traffic passes', async () => {
    setCompliance('noncompliant');
    await until('the device suspended', async () => (await state()) === 'suspended', 15_000);
    const suspended = await lab.portal.admin.device(device.device_id);
    assert.equal(suspended.suspension?.reason, 'noncompliant');
    assert.equal(suspended.suspension?.by, '(portal)');
    await until('the peer is off the node', async () => !(await lab.peersOnNode()).has(deviceKey), 10_000);
    assert.equal(await lab.ping(2), false, 'no traffic passes');
    await lab.portal.reconcile();
    assert.equal((await lab.peersOnNode()).has(deviceKey), false, 'a reconcile pass keeps it off');
  });

  test('compliant again: the peer is back on the node and the same tunnel works again', async () => {
    setCompliance('compliant');
    await until('the device resumed', async () => (await state()) === 'active', 15_000);
    await until('the peer is back on the node', async () => (await lab.peersOnNode()).has(deviceKey), 10_000);
    assert.ok(await lab.ping(20), 'the tunnel works again');
  });
});
