// Jamf Pro's push on a real node (the agent with wireguard-go in a namespace, wg-quick in
// another): a Jamf-shaped "removed from the allowed smart group" delivery takes the device's
// peer off the node within 5 s and its tunnel stops, the same delivery again changes nothing,
// and "added to the group" puts the peer back so that the same file's tunnel works again.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DeviceInfo } from '../../src/protocol/admin-api.js';
import { ALLOWED_GROUP, deliver, groupChange, jamfPushOption, secretsFolder } from '../support/jamf-webhooks.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

const WIREGUARD = 'application/x-wireguard-profile';
const WG_QUICK_ENV = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };
const MAC = { jssID: 17, udid: '5A3C1E2B-7F4D-4C8A-9B1E-2D3F4A5B6C7D', serialNumber: 'C02JAMFE2E1' } as const;

describe('a device that leaves the allowed Jamf Pro smart group leaves the node, and comes back when it joins', () => {
  const folder = secretsFolder();
  let lab: TunnelLab;
  let device: DeviceInfo;
  let receiver = '';
  let deviceKey = '';

  before(async () => {
    lab = await startTunnelLab({
      portalConfig: { reconcileInterval: 'PT1H', mdmPush: { jamf: jamfPushOption(folder) } },
    });
    receiver = `${lab.portal.portal.url}${lab.portal.portal.ctx.config.basePath}/mdm/jamf`;
    await lab.portal.reconcile();
    device = await lab.portal.admin.registerDevice({
      user_id: 'alice',
      profile_id: LAB_PROFILE,
      platform: 'macos',
      serial: MAC.serialNumber,
      mdm_id: MAC.udid,
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
  });

  after(async () => {
    await lab?.close();
    rmSync(folder, { recursive: true, force: true });
  });

  test("the device's tunnel works", async () => {
    assert.ok((await lab.peersOnNode()).has(deviceKey));
    assert.ok(await lab.ping(20), 'the tunnel works');
  });

  test('removed from the group: the peer leaves the node within 5 s and the tunnel stops; a repeated delivery changes nothing', async () => {
    const removal = groupChange('computer', ALLOWED_GROUP, { removed: [MAC] });
    const answer = await deliver(receiver, removal);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body['suspended'], 1);
    await until('the peer is off the node', async () => !(await lab.peersOnNode()).has(deviceKey), 5000);
    assert.equal(await lab.ping(2), false, 'no traffic passes');
    const suspended = await lab.portal.admin.device(device.device_id);
    assert.equal(suspended.state, 'suspended');
    assert.equal(suspended.suspension?.reason, 'jamf-group');

    const again = await deliver(receiver, removal);
    assert.equal(again.status, 200);
    assert.equal(again.body['suspended'], 0);
    assert.equal((await lab.portal.admin.device(device.device_id)).suspension?.since, suspended.suspension?.since);
    await lab.portal.reconcile();
    assert.equal((await lab.peersOnNode()).has(deviceKey), false, 'nor does a reconcile pass bring it back');
  });

  test('added to the group again: the peer is back and the same tunnel works again', async () => {
    const answer = await deliver(receiver, groupChange('computer', ALLOWED_GROUP, { added: [MAC] }));
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body['resumed'], 1);
    await until('the peer is back on the node', async () => (await lab.peersOnNode()).has(deviceKey), 5000);
    assert.ok(await lab.ping(20), 'the tunnel works again');
    assert.equal((await lab.portal.admin.device(device.device_id)).state, 'active');
  });
});
