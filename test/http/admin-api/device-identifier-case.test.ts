// A device's serial and mdm_id are found letter case aside (an MDM names a UDID in capitals that
// another tool registered in small letters), so two live devices whose identifiers differ only
// in case could not be told apart by any MDM event: register_device refuses the second (409,
// naming the identifier), audited and changing nothing, whoever holds the first; the same
// registration sent again still answers its device, and a retired device's identifier may be
// registered in any case.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeviceInfo } from '../../../src/protocol/admin-api.js';
import { auditLog, bearer, makeAdminKey, portalState, twoProfiles } from '../../support/admin-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

async function startPortal(t: { after: (fn: () => Promise<void>) => void }): Promise<TestPortal> {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  return portal;
}

function registration(form: Record<string, string>) {
  return { user_id: 'alice', profile_id: 'employees', platform: 'macos', ...form };
}

async function register(portal: TestPortal, form: Record<string, string>): Promise<DeviceInfo> {
  const response = await portal.post('/register_device', registration(form));
  assert.equal(response.status, 200, response.text);
  return (response.json() as { device: DeviceInfo }).device;
}

async function devicesState(portal: TestPortal): Promise<string> {
  return JSON.stringify({
    state: await portalState(portal),
    devices: await portal.portal.ctx.db.selectFrom('devices').selectAll().orderBy('device_id').execute(),
    history: await portal.portal.ctx.db.selectFrom('device_history').selectAll().orderBy('device_id').execute(),
  });
}

test('a serial or mdm_id a live device holds in another letter case is refused with 409 naming it, audited, and nothing changes', async (t) => {
  const portal = await startPortal(t);
  const laptop = await register(portal, { serial: 'c02xk1abcdef', mdm_id: '8a1b2c3d-0000-4000-8000-00000000000a' });
  const before = await devicesState(portal);
  const cases: [Record<string, string>, RegExp][] = [
    [
      { serial: 'C02XK1ABCDEF' },
      new RegExp(
        `^"serial" "C02XK1ABCDEF" is already held by a live device in another letter case \\(device ${laptop.device_id} of this user, as "c02xk1abcdef"\\); identifiers that differ only in letter case cannot be told apart by the MDM`,
      ),
    ],
    [
      { mdm_id: '8A1B2C3D-0000-4000-8000-00000000000A' },
      /^"mdm_id" "8A1B2C3D-0000-4000-8000-00000000000A" is already held by a live device in another letter case \(device dev_\w+ of this user, as "8a1b2c3d-0000-4000-8000-00000000000a"\)/,
    ],
    [
      { serial: 'C02XK1abcdef', mdm_id: 'another-id' },
      /^"serial" "C02XK1abcdef" is already held by a live device in another letter case/,
    ],
    [
      { user_id: 'bob', serial: 'C02XK1ABCDEF' },
      /^"serial" "C02XK1ABCDEF" is already held by a live device in another letter case \(a device of another user\)/,
    ],
  ];
  for (const [form, message] of cases) {
    const response = await portal.post('/register_device', registration(form));
    assert.equal(response.status, 409, `${JSON.stringify(form)}: ${response.text}`);
    assert.match(errorBody(response.text), message);
  }
  assert.equal(await devicesState(portal), before);
  const refusals = (await auditLog(portal)).filter((entry) => entry.call === 'register_device' && entry.status === 409);
  assert.equal(refusals.length, cases.length);
  assert.match(refusals[0]?.detail ?? '', /already held by a live device in another letter case/);
});

test('the same registration sent again still answers its device, and a key limited to other profiles learns only that a device holds it', async (t) => {
  const portal = await startPortal(t);
  const laptop = await register(portal, { serial: 'c02xk1abcdef', mdm_id: 'udid-a' });
  assert.equal((await register(portal, { serial: 'c02xk1abcdef', mdm_id: 'udid-a' })).device_id, laptop.device_id);
  const guestsKey = await makeAdminKey(portal, 'guests-only', { scope: 'write', profiles: ['guests'] });
  const response = await portal.post(
    '/register_device',
    registration({ profile_id: 'guests', serial: 'C02XK1ABCDEF' }),
    bearer(guestsKey),
  );
  assert.equal(response.status, 409, response.text);
  assert.match(errorBody(response.text), /another letter case \(a device of this user outside the key's profiles\)/);
  assert.doesNotMatch(errorBody(response.text), /dev_/);
});

test("a retired device's identifier may be registered again in another letter case", async (t) => {
  const portal = await startPortal(t);
  const old = await register(portal, { serial: 'c02xk1abcdef' });
  await portal.admin.retireDevice(old.device_id);
  const again = await register(portal, { serial: 'C02XK1ABCDEF' });
  assert.notEqual(again.device_id, old.device_id);
  assert.equal(again.serial, 'C02XK1ABCDEF');
});
