// A suspended device on a real node (the agent with wireguard-go in a namespace, wg-quick in
// another): its tunnel works, suspending takes its peer off the node within seconds with the
// receipt applied, neither a reconcile pass, a restart of the agent (which gets every other
// peer back from the portal) nor enabling its user again brings it back, and resuming puts it
// back so the same file's tunnel works again.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DeviceInfo } from '../../src/protocol/admin-api.js';
import type { WireGuardKey } from '../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

const WIREGUARD = 'application/x-wireguard-profile';
const WG_QUICK_ENV = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };

describe("a suspended device's peer leaves the node and stays off until it is resumed", () => {
  let lab: TunnelLab;
  let device: DeviceInfo;
  /** The device's public key, and bob's (a configuration of no device, which must stay on the node). */
  let deviceKey = '';
  let bobKey = '';

  before(async () => {
    lab = await startTunnelLab({ portalConfig: { reconcileInterval: 'PT1H' } });
    await lab.portal.reconcile();
    device = await lab.portal.admin.registerDevice({
      user_id: 'alice',
      profile_id: LAB_PROFILE,
      platform: 'linux',
      serial: 'SUSPEND-1',
    });
    const created = await lab.portal.post(
      '/create',
      { user_id: 'alice', profile_id: LAB_PROFILE, device_id: device.device_id },
      { accept: WIREGUARD },
    );
    assert.equal(created.status, 200, created.text);
    const interfaceName = lab.lab.interfaceName('wgc');
    const file = join(lab.directory, `${interfaceName}.conf`);
    await writeFile(file, created.text, { mode: 0o600 });
    await lab.client.exec('wg-quick', ['up', file], { env: WG_QUICK_ENV });
    deviceKey = (await lab.client.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim();
    const bob = await lab.portal.admin.create({ user_id: 'bob', profile_id: LAB_PROFILE });
    bobKey = wireGuardPublicKey(parseWireGuardFile(bob.body).interface.get('PrivateKey') as WireGuardKey);
  });

  after(async () => {
    await lab?.close();
  });

  test("the device's tunnel works", async () => {
    assert.ok((await lab.peersOnNode()).has(deviceKey));
    assert.ok(await lab.ping(20), 'the tunnel works');
  });

  test('suspending takes the peer off the node within seconds, the receipt is applied and the tunnel stops', async () => {
    const { device: suspended, revocationId } = await lab.portal.admin.suspendDevice({
      device_id: device.device_id,
      reason: 'noncompliant',
    });
    assert.equal(suspended.state, 'suspended');
    assert.ok(revocationId !== null);
    await until('the peer is off the node', async () => !(await lab.peersOnNode()).has(deviceKey), 5000);
    await until(
      'the receipt is applied',
      async () => (await lab.portal.admin.revocation(revocationId)).state === 'applied',
      5000,
    );
    assert.equal(await lab.ping(2), false, 'no traffic passes');
    assert.ok((await lab.peersOnNode()).has(bobKey), "another user's peer stays");
  });

  test('neither a reconcile pass nor a restart of the agent brings the peer back', async () => {
    await lab.portal.reconcile();
    assert.equal((await lab.peersOnNode()).has(deviceKey), false, 'after a reconcile pass');
    await lab.stopAgent();
    await lab.startAgent();
    await lab.portal.reconcile();
    await until(
      'the restarted node has its other peer back',
      async () => (await lab.peersOnNode()).has(bobKey),
      15_000,
    );
    assert.equal((await lab.peersOnNode()).has(deviceKey), false, 'after the agent restarted');
    assert.equal(await lab.ping(2), false, 'still no traffic');
  });

  test("enabling the device's user again does not bring the peer back either", async () => {
    await lab.portal.admin.disableUser('alice');
    await lab.portal.admin.enableUser('alice');
    assert.equal((await lab.peersOnNode()).has(deviceKey), false);
    await lab.portal.reconcile();
    assert.equal((await lab.peersOnNode()).has(deviceKey), false, 'nor the reconcile pass after it');
  });

  test('resuming puts the peer back and the same tunnel works again', async () => {
    const resumed = await lab.portal.admin.resumeDevice(device.device_id);
    assert.equal(resumed.state, 'active');
    await until('the peer is back on the node', async () => (await lab.peersOnNode()).has(deviceKey), 5000);
    assert.ok(await lab.ping(20), 'the tunnel works again');
    await lab.portal.reconcile();
    assert.ok((await lab.peersOnNode()).has(deviceKey), 'and a reconcile pass keeps it');
  });
});
