// `vpn-portal admin device show`: the device's history from the command line, as table rows
// and in the JSON answer, each change with its reason and who made it; every reason a device
// stands suspended for.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { suspendDevice } from '../../../src/core/devices/index.js';
import { asDeviceId } from '../../../src/shared/ids.js';
import { adminCommandEnv, runAdminInProcess } from '../../support/admin-command.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

function admin(portal: TestPortal, args: readonly string[]) {
  return runAdminInProcess(args, adminCommandEnv(portal));
}

test('device show prints the history of the device, oldest first, with reasons and authors; --json answers it too', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const device = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'HIST-1',
  });
  const suspended = await portal.post('/suspend_device', { device_id: device.device_id, reason: 'reported lost' });
  assert.equal(suspended.status, 200, suspended.text);

  const shown = await admin(portal, ['device', 'show', device.device_id]);
  assert.equal(shown.code, 0, shown.stderr);
  const history = shown.stdout.split('\n').filter((line) => line.startsWith('history '));
  assert.equal(history.length, 2, shown.stdout);
  assert.match(history[0] ?? '', /^history +\S+ registered registered by secret$/);
  assert.match(history[1] ?? '', /^history +\S+ suspended registered → suspended \(reported lost\) by secret$/);

  const json = JSON.parse((await admin(portal, ['device', 'show', device.device_id, '--json'])).stdout) as {
    device: { state: string };
    history: { change: string; reason: string | null }[];
  };
  assert.equal(json.device.state, 'suspended');
  assert.deepEqual(
    json.history.map((entry) => [entry.change, entry.reason]),
    [
      ['registered', null],
      ['suspended', 'reported lost'],
    ],
  );
});

test('device show prints every reason a device stands suspended for', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const device = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'macos',
    serial: 'HIST-2',
  });
  const deviceId = asDeviceId(device.device_id);
  await suspendDevice(portal.portal.ctx, { deviceId, reason: 'noncompliant', by: '(portal)' });
  await suspendDevice(portal.portal.ctx, { deviceId, reason: 'jamf-group', by: 'jamf' });

  const shown = await admin(portal, ['device', 'show', device.device_id]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^suspended +noncompliant, since \S+, by \(portal\)$/m);
  assert.match(shown.stdout, /^also suspended +jamf-group, since \S+, by jamf$/m);
});
