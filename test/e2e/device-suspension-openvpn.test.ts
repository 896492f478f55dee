// A suspended device's OpenVPN client on a real node (the agent running `openvpn`, the standard
// client in another namespace): connected, it is disconnected when the device is suspended (the
// receipt applied) and its reconnects are refused by the connect check, also after a reconcile
// pass; resuming lets the same file connect again.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DeviceInfo } from '../../src/protocol/admin-api.js';
import { AUTH_FAILED, CONNECTED, OpenVpnClient } from '../support/openvpn-client.js';
import { startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

const PROFILE = 'staff';
const OPENVPN = 'application/x-openvpn-profile';

describe("a suspended device's OpenVPN client is disconnected and refused until it is resumed", () => {
  let lab: TunnelLab;
  let device: DeviceInfo;
  let file = '';
  let openvpn: OpenVpnClient | null = null;

  /** Starts the standard client with the device's file in the client namespace. */
  function start(): OpenVpnClient {
    const tun = lab.lab.interfaceName('tun');
    openvpn = new OpenVpnClient(lab.client, file, ['--dev', tun]);
    return openvpn;
  }

  before(async () => {
    lab = await startTunnelLab({
      portalConfig: { reconcileInterval: 'PT1H' },
      profile: {
        profileId: PROFILE,
        displayName: 'Staff',
        wRangeFour: undefined,
        wRangeSix: undefined,
        oRangeFour: '198.19.60.0/24',
        oRangeSix: 'fd00:60::/64',
      },
    });
    await lab.portal.reconcile();
    device = await lab.portal.admin.registerDevice({
      user_id: 'alice',
      profile_id: PROFILE,
      platform: 'linux',
      serial: 'SUSPEND-OVPN-1',
    });
    const created = await lab.portal.post(
      '/create',
      { user_id: 'alice', profile_id: PROFILE, device_id: device.device_id },
      { accept: OPENVPN },
    );
    assert.equal(created.status, 200, created.text);
    file = join(lab.directory, 'device.ovpn');
    await writeFile(file, created.text, { mode: 0o600 });
  });

  after(async () => {
    try {
      await openvpn?.stop();
    } finally {
      await lab?.close();
    }
  });

  test('the device connects', async () => {
    await start().waitFor(CONNECTED, 'Initialization Sequence Completed', 30_000);
  });

  test('suspending disconnects it with the receipt applied, and its reconnects are refused', async () => {
    const client = openvpn;
    assert.ok(client !== null);
    const { revocationId } = await lab.portal.admin.suspendDevice({ device_id: device.device_id });
    assert.ok(revocationId !== null);
    await until(
      'the receipt is applied',
      async () => (await lab.portal.admin.revocation(revocationId)).state === 'applied',
      5000,
    );
    // The node disconnects the client; its automatic reconnect is refused by the portal.
    await client.waitFor(AUTH_FAILED, 'AUTH_FAILED', 30_000);
    await client.stop();
    await lab.portal.reconcile();
    await start().waitFor(AUTH_FAILED, 'AUTH_FAILED after a reconcile pass', 30_000);
    await openvpn?.stop();
  });

  test('resuming lets the same file connect again', async () => {
    const resumed = await lab.portal.admin.resumeDevice(device.device_id);
    assert.equal(resumed.state, 'active');
    await start().waitFor(CONNECTED, 'Initialization Sequence Completed', 30_000);
  });
});
