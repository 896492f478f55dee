// Managed devices: register_device, devices, device and retire_device;
// create and enrollment_token for a registered device, which then holds at most one
// configuration per profile (issuing again replaces it in the same change); the events,
// audit rows and metrics of device changes. Bad input answers 400/403/404/409 and changes nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import type { DeviceInfo } from '../../../src/protocol/admin-api.js';
import { PLATFORMS } from '../../../src/shared/platforms.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { auditLog, bearer, makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const WIREGUARD = 'application/x-wireguard-profile';

/** Two WireGuard profiles, `employees` and `guests`, on nodes that do not answer (the database is the truth). */
const config: Partial<PortalConfigFile> = {
  ...twoProfiles,
  enrollment: { requestsPerMinute: 10_000 },
  // The webhook test's receiver address; nothing listens there, only the outbox is read.
  webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
};

async function startPortal(t: { after: (fn: () => Promise<void>) => void }): Promise<TestPortal> {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  return portal;
}

async function register(portal: TestPortal, form: Record<string, string>): Promise<DeviceInfo> {
  const response = await portal.post('/register_device', {
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'windows',
    ...form,
  });
  assert.equal(response.status, 200, response.text);
  return (response.json() as { device: DeviceInfo }).device;
}

function create(portal: TestPortal, form: Record<string, string>, headers: Record<string, string> = {}) {
  return portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees', ...form },
    { accept: WIREGUARD, ...headers },
  );
}

/** What a device call can change: devices, configurations, users, tokens. */
async function deviceState(portal: TestPortal): Promise<string> {
  const db = portal.portal.ctx.db;
  return JSON.stringify({
    devices: await db.selectFrom('devices').selectAll().orderBy('device_id').execute(),
    peers: await db.selectFrom('wg_peers').selectAll().orderBy('public_key').execute(),
    users: await db.selectFrom('users').select(['user_id', 'is_disabled']).orderBy('user_id').execute(),
    tokens: await db.selectFrom('enrollment_tokens').selectAll().orderBy('token_id').execute(),
  });
}

async function peersOfDevice(
  portal: TestPortal,
  deviceId: string,
): Promise<{ public_key: string; profile_id: string }[]> {
  return portal.portal.ctx.db
    .selectFrom('wg_peers')
    .select(['public_key', 'profile_id'])
    .where('device_id', '=', deviceId)
    .orderBy('public_key')
    .execute();
}

test('a device is registered with its own stable id, shown with its configurations, listed, and the call is audited', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'C02XK1', mdm_id: 'intune-1' });
  assert.match(device.device_id, /^dev_[0-9a-f]{24}$/);
  assert.deepEqual(
    { ...device, device_id: '', created_at: '' },
    {
      device_id: '',
      user_id: 'alice',
      profile_id: 'employees',
      platform: 'windows',
      serial: 'C02XK1',
      mdm_id: 'intune-1',
      identity: 'token',
      certificate: null,
      state: 'registered',
      suspension: null,
      created_at: '',
      retired_at: null,
      last_seen_at: null,
      configurations: [],
    },
  );
  assert.deepEqual(await portal.admin.device(device.device_id), device);
  assert.deepEqual((await portal.admin.devices()).devices, [device]);
  // The same registration again (an MDM retrying) answers the same device and changes nothing.
  const before = await deviceState(portal);
  assert.equal((await register(portal, { serial: 'C02XK1', mdm_id: 'intune-1' })).device_id, device.device_id);
  assert.equal(await deviceState(portal), before);
  const [row] = (await auditLog(portal)).filter((entry) => entry.call === 'register_device');
  assert.equal(row?.status, 200);
  assert.equal(row?.userId, 'alice');
});

test('bad registrations answer 400, 404 or 409 with a clear reason and change nothing', async (t) => {
  const portal = await startPortal(t);
  await register(portal, { serial: 'SER-1' });
  await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  const before = await deviceState(portal);
  const cases: [Record<string, string>, number, RegExp][] = [
    [
      { platform: 'beos', serial: 'X' },
      400,
      new RegExp(`invalid value for "platform": one of ${PLATFORMS.join(', ')}`),
    ],
    [{}, 400, /needs "serial" or "mdm_id"/],
    [{ serial: 'has space' }, 400, /invalid value for "serial"/],
    [{ profile_id: 'nope', serial: 'X' }, 404, /^no such "profile_id": "nope"; known profiles: employees(, |$)/],
    [{ user_id: 'bob', serial: 'SER-1' }, 409, /already registered to another user's device/],
    [
      { serial: 'SER-1', platform: 'macos' },
      409,
      /already registered to device dev_\w+ of this user, with other details/,
    ],
  ];
  for (const [form, status, message] of cases) {
    const response = await portal.post('/register_device', {
      user_id: 'alice',
      profile_id: 'employees',
      platform: 'windows',
      ...form,
    });
    assert.equal(response.status, status, `${JSON.stringify(form)}: ${response.text}`);
    assert.match(errorBody(response.text), message);
  }
  assert.equal(await deviceState(portal), before);
});

test("a retired device's serial may be registered again, as a new device", async (t) => {
  const portal = await startPortal(t);
  const first = await register(portal, { serial: 'SER-2' });
  await portal.admin.retireDevice(first.device_id);
  const second = await register(portal, { user_id: 'bob', serial: 'SER-2' });
  assert.notEqual(second.device_id, first.device_id);
  assert.equal((await portal.admin.device(first.device_id)).state, 'retired');
  assert.deepEqual(
    (await portal.admin.devices({ serial: 'SER-2' })).devices.map((device) => [device.user_id, device.state]),
    [
      ['bob', 'registered'],
      ['alice', 'retired'],
    ],
  );
});

test('issuing for a device again replaces its configuration in that profile, in the same change; other profiles keep theirs', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'SER-3', platform: 'linux' });
  const first = await create(portal, { device_id: device.device_id });
  assert.equal(first.status, 200, first.text);
  const [old] = await peersOfDevice(portal, device.device_id);
  assert.equal((await portal.admin.device(device.device_id)).state, 'active');
  const guests = await create(portal, { serial: 'SER-3', profile_id: 'guests' });
  assert.equal(guests.status, 200, guests.text);

  const second = await create(portal, { device_id: device.device_id, platform: 'linux' });
  assert.equal(second.status, 200, second.text);
  const peers = await peersOfDevice(portal, device.device_id);
  assert.equal(peers.length, 2);
  assert.equal(peers.filter((peer) => peer.profile_id === 'employees').length, 1);
  assert.notEqual(peers.find((peer) => peer.profile_id === 'employees')?.public_key, old?.public_key);
  const shown = await portal.admin.device(device.device_id);
  assert.deepEqual(
    shown.configurations.map((configuration) => configuration.profile_id),
    ['employees', 'guests'],
  );
  // The audit row of the replacing call names both the old and the new configuration.
  const replacing = (await auditLog(portal)).find(
    (entry) => entry.call === 'create' && entry.connectionIds.includes(old?.public_key ?? ''),
  );
  assert.equal(replacing?.connectionIds.length, 2);
  // The old configuration's revocation has a receipt that says it was replaced.
  const receipts = (await portal.get('/revocations', { user_id: 'alice' })).json() as {
    revocations: { reason: string; connection_ids: string[] }[];
  };
  assert.deepEqual(
    receipts.revocations.map((receipt) => [receipt.reason, receipt.connection_ids]),
    [['replaced', [old?.public_key]]],
  );
  // A configuration made for the user only is not the device's, and stays.
  assert.equal((await create(portal, {})).status, 200);
  assert.equal((await portal.admin.userConfigurationList('alice')).length, 3);
});

test('a device re-enrolling with its own public key gets its configuration replaced; a key of another configuration stays 409', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'SER-4' });
  const { publicKey } = generateWireGuardKeyPair();
  assert.equal((await create(portal, { device_id: device.device_id, public_key: publicKey })).status, 200);
  const again = await create(portal, { device_id: device.device_id, public_key: publicKey });
  assert.equal(again.status, 200, again.text);
  assert.deepEqual(
    (await peersOfDevice(portal, device.device_id)).map((peer) => peer.public_key),
    [publicKey],
  );
  const other = generateWireGuardKeyPair().publicKey;
  assert.equal((await create(portal, { public_key: other })).status, 200);
  const before = await deviceState(portal);
  const taken = await create(portal, { device_id: device.device_id, public_key: other });
  assert.equal(taken.status, 409);
  assert.match(errorBody(taken.text), /"public_key" is already in use/);
  assert.equal(await deviceState(portal), before);
});

test('create naming a device refuses another platform, another user, a retired, unknown or doubly named device, and changes nothing', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'SER-5', mdm_id: 'M-5', platform: 'ios' });
  const retired = await register(portal, { serial: 'SER-6' });
  await portal.admin.retireDevice(retired.device_id);
  const before = await deviceState(portal);
  const cases: [Record<string, string>, number, RegExp][] = [
    [{ device_id: device.device_id, platform: 'android' }, 409, /registered with platform "ios", not "android"/],
    [{ device_id: device.device_id, user_id: 'bob' }, 409, /belongs to another user/],
    [{ device_id: retired.device_id }, 409, /is retired/],
    [{ device_id: 'dev_000000000000000000000000' }, 404, /no registered device/],
    [{ serial: 'SER-6' }, 404, /no registered device/],
    [{ device_id: device.device_id, serial: 'SER-5' }, 400, /by one of "device_id", "serial" or "mdm_id"/],
    [{ device_id: 'dev_x' }, 400, /invalid value for "device_id"/],
    [{ mdm_id: 'M-5', platform: 'palm' }, 400, /invalid value for "platform": one of ios, macos/],
  ];
  for (const [form, status, message] of cases) {
    const response = await create(portal, form);
    assert.equal(response.status, status, `${JSON.stringify(form)}: ${response.text}`);
    assert.match(errorBody(response.text), message);
  }
  assert.equal(await deviceState(portal), before);
  assert.equal((await create(portal, { mdm_id: 'M-5' })).status, 200, 'by mdm_id, with the platform by default');
});

test('retiring a device takes every configuration of it out of the database and revokes its tokens; again it changes nothing', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'SER-7' });
  await create(portal, { device_id: device.device_id });
  await create(portal, { device_id: device.device_id, profile_id: 'guests' });
  await create(portal, {});
  const token = await portal.post('/enrollment_token', {
    user_id: 'alice',
    profile_id: 'employees',
    device_id: device.device_id,
  });
  assert.equal(token.status, 200, token.text);
  const retired = await portal.admin.retireDevice(device.device_id);
  assert.equal(retired.state, 'retired');
  assert.notEqual(retired.retired_at, null);
  assert.deepEqual(retired.configurations, []);
  assert.deepEqual(await peersOfDevice(portal, device.device_id), []);
  assert.equal((await portal.admin.userConfigurationList('alice')).length, 1, "the user's own configuration stays");
  const [listedToken] = await portal.admin.enrollmentTokens('alice');
  assert.equal(listedToken?.state, 'revoked');
  const row = (await auditLog(portal)).find((entry) => entry.call === 'retire_device');
  assert.equal(row?.connectionIds.length, 2);
  assert.equal(row?.userId, 'alice', "the row names the device's user, though the call names only the device");

  const before = await deviceState(portal);
  assert.equal((await portal.admin.retireDevice(device.device_id)).retired_at, retired.retired_at);
  assert.equal(await deviceState(portal), before);
  const unknown = await portal.post('/retire_device', { device_id: 'dev_000000000000000000000000' });
  assert.equal(unknown.status, 404);
  assert.equal((await portal.get('/device', { device_id: 'dev_000000000000000000000000' })).status, 404);
  assert.equal(await deviceState(portal), before);
});

test('retiring a device answers the receipt of its revocation, which stays pending while its nodes do not answer', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'SER-8' });
  await create(portal, { device_id: device.device_id });
  await create(portal, { device_id: device.device_id, profile_id: 'guests' });
  const connectionIds = (await portal.admin.userConfigurationList('alice'))
    .map((configuration) => configuration.connection_id)
    .sort();

  const retired = await portal.post('/retire_device', { device_id: device.device_id });
  assert.equal(retired.status, 200, retired.text);
  const revocationId = retired.headers.get('vpn-portal-revocation') ?? '';
  const receipt = await portal.get('/revocation', { revocation_id: revocationId });
  assert.equal(receipt.status, 200, receipt.text);
  const body = receipt.json() as { state: string; user_id: string; reason: string; connection_ids: string[] };
  assert.deepEqual(
    [body.state, body.user_id, body.reason, [...body.connection_ids].sort()],
    ['pending', 'alice', 'retire_device', connectionIds],
  );

  const again = await portal.post('/retire_device', { device_id: device.device_id });
  assert.equal(again.status, 200);
  assert.equal(again.headers.get('vpn-portal-revocation'), null, 'nothing was revoked the second time');
});

test('an enrollment token for a device makes the device its configuration, replacing the one it had', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'SER-8', platform: 'macos' });
  assert.equal((await create(portal, { device_id: device.device_id })).status, 200);
  const refused = await portal.post('/enrollment_token', {
    user_id: 'alice',
    profile_id: 'employees',
    device_id: device.device_id,
    platform: 'windows',
  });
  assert.equal(refused.status, 409);
  const made = await portal.post('/enrollment_token', { user_id: 'alice', profile_id: 'employees', serial: 'SER-8' });
  assert.equal(made.status, 200, made.text);
  const { enrollment_token } = made.json() as { enrollment_token: string };
  const { publicKey } = generateWireGuardKeyPair();
  const enrolled = await portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
    method: 'POST',
    body: new URLSearchParams({ enrollment_token, public_key: publicKey }),
    headers: { accept: WIREGUARD },
  });
  assert.equal(enrolled.status, 200, enrolled.text);
  assert.deepEqual(
    (await peersOfDevice(portal, device.device_id)).map((peer) => peer.public_key),
    [publicKey],
  );
});

test('devices are listed newest first a page at a time, by every filter', async (t) => {
  const portal = await startPortal(t);
  const made: DeviceInfo[] = [];
  for (let index = 0; index < 5; index++) {
    made.push(
      await register(portal, {
        serial: `S${index}`,
        platform: index % 2 === 0 ? 'android' : 'ios',
        user_id: index < 3 ? 'alice' : 'bob',
      }),
    );
  }
  await create(portal, { serial: 'S0' });
  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await portal.admin.devices({ limit: 2, ...(cursor === undefined ? {} : { cursor }) });
    assert.ok(page.devices.length <= 2);
    seen.push(...page.devices.map((device) => device.device_id));
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  assert.deepEqual(seen, made.map((device) => device.device_id).reverse());
  assert.deepEqual(
    (await portal.admin.devices()).devices.map((device) => [device.serial, device.configurations.length]),
    [
      ['S4', 0],
      ['S3', 0],
      ['S2', 0],
      ['S1', 0],
      ['S0', 1],
    ],
    'each device of a page with its own configurations',
  );
  const ids = async (query: Parameters<TestPortal['admin']['devices']>[0]) =>
    (await portal.admin.devices(query)).devices.map((device) => device.serial);
  assert.deepEqual(await ids({ platform: 'ios' }), ['S3', 'S1']);
  assert.deepEqual(await ids({ user_id: 'bob' }), ['S4', 'S3']);
  assert.deepEqual(await ids({ state: 'active' }), ['S0']);
  assert.deepEqual(await ids({ identity: 'certificate' }), []);
  assert.deepEqual(await ids({ serial: 'S2' }), ['S2']);
  assert.deepEqual(await ids({ last_seen_before: '2000-01-01' }), []);
  assert.deepEqual((await ids({ last_seen_before: '2999-01-01' })).length, 5);
  const bad = await portal.get('/devices', { state: 'lost' });
  assert.equal(bad.status, 400);
  assert.match(errorBody(bad.text), /invalid value for "state"/);
});

test("a key limited to some profiles registers, sees and retires only its profiles' devices", async (t) => {
  const portal = await startPortal(t);
  const employees = await register(portal, { serial: 'E-1' });
  const key = await makeAdminKey(portal, 'guests-only', { scope: 'write', profiles: ['guests'] });
  const headers = bearer(key);
  const refused = await portal.post(
    '/register_device',
    { user_id: 'carol', profile_id: 'employees', platform: 'other', serial: 'E-2' },
    headers,
  );
  assert.equal(refused.status, 403);
  const own = await portal.post(
    '/register_device',
    { user_id: 'carol', profile_id: 'guests', platform: 'other', serial: 'G-1' },
    headers,
  );
  assert.equal(own.status, 200, own.text);
  const listed = (await portal.get('/devices', {}, headers)).json() as { devices: DeviceInfo[] };
  assert.deepEqual(
    listed.devices.map((device) => device.serial),
    ['G-1'],
  );
  assert.equal((await portal.get('/device', { device_id: employees.device_id }, headers)).status, 403);
  const before = await deviceState(portal);
  assert.equal((await portal.post('/retire_device', { device_id: employees.device_id }, headers)).status, 403);
  assert.equal(await deviceState(portal), before);
});

test('a key limited to some profiles may not retire a device with a configuration or an enrollment token not revoked yet outside them: 403 names them, and nothing changes', async (t) => {
  const portal = await startPortal(t);
  const key = await makeAdminKey(portal, 'employees-only', { scope: 'write', profiles: ['employees'] });
  const mixed = await register(portal, { serial: 'MIX-1' });
  assert.equal((await create(portal, { device_id: mixed.device_id })).status, 200);
  assert.equal((await create(portal, { device_id: mixed.device_id, profile_id: 'guests' })).status, 200);
  await portal.admin.enrollmentToken({ user_id: 'alice', profile_id: 'guests', device_id: mixed.device_id });
  // Only a token in another profile, no configuration at all: retiring would still revoke it.
  const staged = await register(portal, { serial: 'MIX-2' });
  const token = await portal.admin.enrollmentToken({
    user_id: 'alice',
    profile_id: 'guests',
    device_id: staged.device_id,
  });
  const before = await deviceState(portal);
  for (const [device, held] of [
    [mixed, 'configurations in guests and enrollment tokens in guests'],
    [staged, 'enrollment tokens in guests'],
  ] as const) {
    const refused = await portal.post('/retire_device', { device_id: device.device_id }, bearer(key));
    assert.equal(refused.status, 403, refused.text);
    assert.equal(
      errorBody(refused.text),
      `key "employees-only" may not retire device "${device.device_id}": it has ${held}, outside its profiles (employees)`,
    );
  }
  assert.equal(await deviceState(portal), before, 'no configuration, token or device changed');
  const refusals = (await auditLog(portal)).filter((entry) => entry.call === 'retire_device');
  assert.deepEqual(
    refusals.map((entry) => entry.status),
    [403, 403],
  );

  // A revoked token changes no more: the device lies within the key's reach again.
  assert.equal(
    (await portal.post('/revoke_enrollment_token', { user_id: 'alice', token_id: token.token_id })).status,
    204,
  );
  const retired = await portal.post('/retire_device', { device_id: staged.device_id }, bearer(key));
  assert.equal(retired.status, 200, retired.text);
  assert.equal((retired.json() as { device: DeviceInfo }).device.state, 'retired');
});

test('a key limited to some profiles sees of a device only its configurations in them, in device and devices alike', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'SEEN-1' });
  assert.equal((await create(portal, { device_id: device.device_id })).status, 200);
  assert.equal((await create(portal, { device_id: device.device_id, profile_id: 'guests' })).status, 200);
  const profilesOf = (shown: DeviceInfo) => shown.configurations.map((configuration) => configuration.profile_id);
  assert.deepEqual(profilesOf(await portal.admin.device(device.device_id)), ['employees', 'guests']);

  const key = bearer(await makeAdminKey(portal, 'employees-reader', { scope: 'read', profiles: ['employees'] }));
  const one = await portal.get('/device', { device_id: device.device_id }, key);
  assert.equal(one.status, 200, one.text);
  assert.deepEqual(profilesOf((one.json() as { device: DeviceInfo }).device), ['employees']);
  const page = (await portal.get('/devices', { user_id: 'alice' }, key)).json() as { devices: DeviceInfo[] };
  assert.deepEqual(page.devices.map(profilesOf), [['employees']]);
  // As user_configuration_list shows the same key the same user.
  const list = (await portal.get('/user_configuration_list', { user_id: 'alice' }, key)).json() as {
    user_configuration_list: { connection_id: string }[];
  };
  assert.deepEqual(
    list.user_configuration_list.map((entry) => entry.connection_id),
    (one.json() as { device: DeviceInfo }).device.configurations.map((configuration) => configuration.connection_id),
  );
});

test('a key limited to some profiles is shown of a device’s history only the enrollments in them, and no other profile’s receipt', async (t) => {
  const portal = await startPortal(t);
  const device = await register(portal, { serial: 'HIST-1' });
  // The device gets a configuration in employees, then one in guests, which is issued again:
  // the second guests enrollment replaces the first, with a receipt of that guests configuration.
  for (const profile of ['employees', 'guests', 'guests'])
    assert.equal((await create(portal, { device_id: device.device_id, profile_id: profile })).status, 200);
  type History = { history: { change: string; revocation_id: string | null }[] };
  const full = (await portal.get('/device', { device_id: device.device_id })).json() as History;
  assert.deepEqual(
    full.history.map((entry) => entry.change),
    ['registered', 'enrolled', 'enrolled', 'enrolled'],
  );
  const guestsReceipt = full.history.at(-1)?.revocation_id;
  assert.ok(typeof guestsReceipt === 'string', 'the replacement has its receipt');

  const key = bearer(await makeAdminKey(portal, 'employees-reader', { scope: 'read', profiles: ['employees'] }));
  const limited = await portal.get('/device', { device_id: device.device_id }, key);
  assert.equal(limited.status, 200, limited.text);
  assert.deepEqual(
    (limited.json() as History).history.map((entry) => [entry.change, entry.revocation_id]),
    [
      ['registered', null],
      ['enrolled', null],
    ],
    'its registration and its enrollment in employees; nothing of guests',
  );
  assert.equal(limited.text.includes(guestsReceipt), false, 'the guests receipt is not named');
  // As the receipt itself and the receipts listing answer the same key.
  assert.equal((await portal.get('/revocation', { revocation_id: guestsReceipt }, key)).status, 403);
  assert.deepEqual((await portal.get('/revocations', {}, key)).json(), { revocations: [] });
});

test('device changes are announced to webhooks and counted in the metrics by platform, state and identity', async (t) => {
  const portal = await startPortal(t);
  await portal.admin.createWebhook({
    url: 'http://127.0.0.1:9/hook',
    event_types: 'device.registered,device.enrolled,device.replaced,device.retired',
  });
  const device = await register(portal, { serial: 'W-1', platform: 'android' });
  await create(portal, { device_id: device.device_id });
  await create(portal, { device_id: device.device_id });
  await portal.admin.retireDevice(device.device_id);
  await register(portal, { serial: 'W-2', platform: 'android' });
  const rows = await portal.portal.ctx.db
    .selectFrom('webhook_deliveries')
    .select(['event_type', 'payload'])
    .orderBy('delivery_id')
    .execute();
  assert.deepEqual(
    rows.map((row) => row.event_type),
    [
      'device.registered',
      'device.enrolled',
      'device.enrolled',
      'device.replaced',
      'device.retired',
      'device.registered',
    ],
  );
  const replaced = JSON.parse(rows[3]?.payload ?? '{}') as {
    data: { device_id: string; platform: string; replaced: unknown[]; configuration: { profile_id: string } };
  };
  assert.equal(replaced.data.device_id, device.device_id);
  assert.equal(replaced.data.platform, 'android');
  assert.equal(replaced.data.replaced.length, 1);
  assert.equal(replaced.data.configuration.profile_id, 'employees');

  const text = await (await fetch(portal.portal.metricsUrl ?? '')).text();
  assert.match(text, /vpn_portal_devices\{platform="android",state="retired",identity="token"\} 1/);
  assert.match(text, /vpn_portal_devices\{platform="android",state="registered",identity="token"\} 1/);
});

test('destroying a user retires its live devices: each is announced as device.retired, and the rows go with the user', async (t) => {
  const portal = await startPortal(t);
  await portal.admin.createWebhook({ url: 'http://127.0.0.1:9/hook', event_types: 'device.retired' });
  const live = await register(portal, { serial: 'D-1' });
  await create(portal, { device_id: live.device_id });
  const retired = await register(portal, { serial: 'D-2' });
  await portal.admin.retireDevice(retired.device_id);
  await register(portal, { serial: 'D-3', user_id: 'bob' });
  assert.equal((await portal.post('/destroy', { user_id: 'alice' })).status, 204);
  const rows = await portal.portal.ctx.db
    .selectFrom('webhook_deliveries')
    .select(['event_type', 'payload'])
    .orderBy('delivery_id')
    .execute();
  const announced = rows.map(
    (row) => (JSON.parse(row.payload) as { data: { device_id: string; user_id: string } }).data,
  );
  assert.deepEqual(
    announced.map((data) => [data.device_id, data.user_id]),
    [
      [retired.device_id, 'alice'],
      [live.device_id, 'alice'],
    ],
    'the device retired before is not announced again',
  );
  assert.deepEqual(
    (await portal.admin.devices()).devices.map((device) => device.serial),
    ['D-3'],
  );
});
