// One configuration per device and profile, on a real node: a registered
// device's tunnel works with wg-quick and wireguard-go; issuing for the device again leaves one
// configuration, and the old peer is gone from the node (`wg show`) while the new file's tunnel
// works; re-enrolling with the same key keeps the peer; retiring the device takes its peer off the node and its tunnel stops. The device's
// last_seen_at follows the session the node reports.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DeviceInfo } from '../../src/protocol/admin-api.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

const WIREGUARD = 'application/x-wireguard-profile';
const WG_QUICK_ENV = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };

describe('a device holds one configuration per profile on a real node, and retiring it ends its tunnel', () => {
  let lab: TunnelLab;
  let device: DeviceInfo;
  /** The file brought up last, to take it down before the next. */
  let upFile: string | undefined;

  before(async () => {
    lab = await startTunnelLab({ portalConfig: { reconcileInterval: 'PT3S' } });
    await lab.portal.reconcile();
    device = await lab.portal.admin.registerDevice({
      user_id: 'alice',
      profile_id: LAB_PROFILE,
      platform: 'linux',
      serial: 'LAB-1',
    });
  });

  after(async () => {
    await lab?.close();
  });

  /** create for the device, brought up in the client namespace (the one before it taken down); its public key. */
  async function issueAndConnect(): Promise<string> {
    const created = await lab.portal.post(
      '/create',
      { user_id: 'alice', profile_id: LAB_PROFILE, device_id: device.device_id },
      { accept: WIREGUARD },
    );
    assert.equal(created.status, 200, created.text);
    if (upFile !== undefined) await lab.client.exec('wg-quick', ['down', upFile], { env: WG_QUICK_ENV });
    const interfaceName = lab.lab.interfaceName('wgc');
    upFile = join(lab.directory, `${interfaceName}.conf`);
    await writeFile(upFile, created.text, { mode: 0o600 });
    await lab.client.exec('wg-quick', ['up', upFile], { env: WG_QUICK_ENV });
    return (await lab.client.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim();
  }

  test("re-issuing leaves one configuration: the old peer is gone from the node, the new file's tunnel works", async () => {
    const first = await issueAndConnect();
    assert.ok((await lab.peersOnNode()).has(first));
    assert.ok(await lab.ping(20), 'the first tunnel works');
    await until(
      'last_seen_at set from the session',
      async () => (await lab.portal.admin.device(device.device_id)).last_seen_at !== null,
      15_000,
    );

    const second = await issueAndConnect();
    assert.notEqual(second, first);
    const peers = await lab.peersOnNode();
    assert.equal(peers.has(first), false, 'the replaced peer is off the node at once');
    assert.ok(peers.has(second));
    const shown = await lab.portal.admin.device(device.device_id);
    assert.deepEqual(
      shown.configurations.map((configuration) => configuration.connection_id),
      [second],
    );
    assert.equal((await lab.portal.admin.userConfigurationList('alice')).length, 1);
    assert.ok(await lab.ping(20), 'the new tunnel works');
    // A reconcile pass does not bring the replaced peer back.
    await lab.portal.reconcile();
    assert.equal((await lab.peersOnNode()).has(first), false);
  });

  test('a device re-enrolling with the key it uses keeps its peer on the node, with the revision of the new configuration', async () => {
    const other = await lab.portal.admin.registerDevice({
      user_id: 'bob',
      profile_id: LAB_PROFILE,
      platform: 'linux',
      serial: 'LAB-2',
    });
    const publicKey = generateWireGuardKeyPair().publicKey;
    for (let attempt = 0; attempt < 2; attempt++) {
      const created = await lab.portal.post(
        '/create',
        { user_id: 'bob', profile_id: LAB_PROFILE, device_id: other.device_id, public_key: publicKey },
        { accept: WIREGUARD },
      );
      assert.equal(created.status, 200, created.text);
    }
    assert.ok(
      (await lab.peersOnNode()).has(publicKey),
      'the removal of the replaced configuration did not take the new one off',
    );
    await lab.portal.reconcile();
    assert.ok((await lab.peersOnNode()).has(publicKey));
    assert.equal((await lab.portal.admin.device(other.device_id)).configurations.length, 1);
  });

  test('retiring the device takes its peer off the node and its tunnel stops', async () => {
    const [configuration] = (await lab.portal.admin.device(device.device_id)).configurations;
    assert.ok(configuration !== undefined);
    const retired = await lab.portal.admin.retireDevice(device.device_id);
    assert.equal(retired.state, 'retired');
    assert.equal((await lab.peersOnNode()).has(configuration.connection_id), false);
    assert.equal(await lab.ping(2), false, 'no traffic passes any more');
    await lab.portal.reconcile();
    assert.equal(
      (await lab.peersOnNode()).has(configuration.connection_id),
      false,
      'and a reconcile pass does not bring it back',
    );
  });
});
