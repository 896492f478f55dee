// POST /suspend_device and /resume_device over HTTP: the answers (the device with its
// suspension, the receipt's header), the listing by state, bad input answered 400/404/409 with a
// clear reason and no change, a key limited to other profiles refused, the audit rows, the
// webhooks `device.suspended` / `device.resumed`, the metrics by reason, and the history GET /device answers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import type { DeviceInfo } from '../../../src/protocol/admin-api.js';
import { resumeDevice, suspendDevice } from '../../../src/core/devices/index.js';
import { asDeviceId } from '../../../src/shared/ids.js';
import { auditLog, bearer, makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const WIREGUARD = 'application/x-wireguard-profile';

const config: Partial<PortalConfigFile> = {
  ...twoProfiles,
  // The webhook test's receiver address; nothing listens there, only the outbox is read.
  webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
};

async function startPortal(t: { after: (fn: () => Promise<void>) => void }): Promise<TestPortal> {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  return portal;
}

/** A device of alice in `employees` with one WireGuard configuration. */
async function deviceWithConfiguration(portal: TestPortal, serial: string): Promise<DeviceInfo> {
  const device = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'macos',
    serial,
  });
  const created = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees', device_id: device.device_id },
    { accept: WIREGUARD },
  );
  assert.equal(created.status, 200, created.text);
  return portal.admin.device(device.device_id);
}

/** What a suspension can change. */
async function deviceState(portal: TestPortal): Promise<string> {
  const db = portal.portal.ctx.db;
  return JSON.stringify({
    devices: await db.selectFrom('devices').selectAll().orderBy('device_id').execute(),
    history: await db.selectFrom('device_history').selectAll().orderBy('history_id').execute(),
    peers: await db.selectFrom('wg_peers').selectAll().orderBy('public_key').execute(),
    receipts: await db.selectFrom('revocations').selectAll().orderBy('revocation_id').execute(),
  });
}

test('suspend_device answers the device suspended with its receipt; again it answers the same and changes nothing; resume_device ends it', async (t) => {
  const portal = await startPortal(t);
  const device = await deviceWithConfiguration(portal, 'H-1');
  const suspended = await portal.post('/suspend_device', { device_id: device.device_id, reason: 'lost' });
  assert.equal(suspended.status, 200, suspended.text);
  const body = (suspended.json() as { device: DeviceInfo }).device;
  assert.equal(body.state, 'suspended');
  assert.equal(body.suspension?.reason, 'lost');
  assert.equal(body.suspension?.by, 'secret');
  assert.equal(body.configurations.length, 1, 'the configuration is kept');
  const revocationId = suspended.headers.get('vpn-portal-revocation') ?? '';
  const receipt = (await portal.get('/revocation', { revocation_id: revocationId })).json() as {
    reason: string;
    state: string;
    connection_ids: string[];
  };
  assert.deepEqual(
    [receipt.reason, receipt.state, receipt.connection_ids],
    ['suspend_device', 'pending', [device.configurations[0]?.connection_id]],
  );

  const before = await deviceState(portal);
  const again = await portal.post('/suspend_device', { device_id: device.device_id, reason: 'other' });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.headers.get('vpn-portal-revocation'), revocationId, 'the suspension’s own receipt');
  assert.equal((again.json() as { device: DeviceInfo }).device.suspension?.reason, 'lost');
  assert.equal(await deviceState(portal), before);

  const listed = await portal.admin.devices({ state: 'suspended' });
  assert.deepEqual(
    listed.devices.map((entry) => [entry.device_id, entry.suspension?.reason]),
    [[device.device_id, 'lost']],
  );

  const resumed = await portal.post('/resume_device', { device_id: device.device_id });
  assert.equal(resumed.status, 200, resumed.text);
  const back = (resumed.json() as { device: DeviceInfo }).device;
  assert.deepEqual([back.state, back.suspension], ['active', null]);
  const superseded = (await portal.get('/revocation', { revocation_id: revocationId })).json() as { state: string };
  assert.equal(superseded.state, 'superseded', 'the receipt no node confirmed is superseded by the resume');
  const afterResume = await deviceState(portal);
  assert.equal((await portal.post('/resume_device', { device_id: device.device_id })).status, 200);
  assert.equal(await deviceState(portal), afterResume, 'resuming a device not suspended changes nothing');
});

test('an administrator suspending a device the portal’s own checks suspended takes the suspension over: the checks no longer resume it', async (t) => {
  const portal = await startPortal(t);
  const ctx = portal.portal.ctx;
  const device = await deviceWithConfiguration(portal, 'H-8');
  const deviceId = asDeviceId(device.device_id);
  const byChecks = await suspendDevice(ctx, { deviceId, reason: 'noncompliant', by: '(portal)' });

  // The administrator also wants it off, for a reason of their own.
  const suspended = await portal.post('/suspend_device', { device_id: device.device_id, reason: 'stolen' });
  assert.equal(suspended.status, 200, suspended.text);
  assert.equal(suspended.headers.get('vpn-portal-revocation'), byChecks.revocationId, 'the suspension’s own receipt');
  const taken = (suspended.json() as { device: DeviceInfo }).device;
  assert.deepEqual([taken.state, taken.suspension?.reason, taken.suspension?.by], ['suspended', 'stolen', 'secret']);
  assert.deepEqual(
    taken.suspension?.other_reasons.map((other) => [other.reason, other.by]),
    [['noncompliant', '(portal)']],
    'the reason it replaced still stands',
  );

  // The device is compliant again: the checks end only their own reason.
  const checks = { by: '(portal)', onlyIfReason: ['noncompliant', 'stale'], onlyIfBy: '(portal)' };
  const kept = await resumeDevice(ctx, { deviceId, ...checks });
  assert.equal(kept.outcome, 'still-suspended');
  assert.equal(kept.device.device.state, 'suspended', 'stays suspended: the administrator’s now');
  assert.deepEqual([kept.device.device.suspension?.reason, kept.device.device.suspension?.others], ['stolen', []]);
  const history = (await portal.get('/device', { device_id: device.device_id })).json() as {
    history: { change: string; state_before: string | null; reason: string | null; by: string }[];
  };
  assert.deepEqual(
    history.history.slice(-3).map((entry) => [entry.change, entry.state_before, entry.reason, entry.by]),
    [
      ['suspended', 'active', 'noncompliant', '(portal)'],
      ['suspended', 'suspended', 'stolen', 'secret'],
      ['resumed', 'suspended', 'noncompliant', '(portal)'],
    ],
  );
  // Resumed by hand: back to the state the first suspension interrupted.
  const resumed = await portal.post('/resume_device', { device_id: device.device_id });
  assert.equal((resumed.json() as { device: DeviceInfo }).device.state, 'active');
});

test('the device lists every reason it stands suspended for, and resume_device ends them all at once, an administrator’s override', async (t) => {
  const portal = await startPortal(t);
  const ctx = portal.portal.ctx;
  const device = await deviceWithConfiguration(portal, 'H-10');
  const deviceId = asDeviceId(device.device_id);
  await suspendDevice(ctx, { deviceId, reason: 'noncompliant', by: '(portal)' });
  await suspendDevice(ctx, { deviceId, reason: 'jamf-group', by: 'jamf' });
  const listed = (await portal.admin.devices({ state: 'suspended' })).devices[0]?.suspension;
  assert.deepEqual(
    [listed?.reason, listed?.by, listed?.other_reasons.map((other) => [other.reason, other.by])],
    ['noncompliant', '(portal)', [['jamf-group', 'jamf']]],
  );

  const resumed = await portal.post('/resume_device', { device_id: device.device_id });
  assert.equal(resumed.status, 200, resumed.text);
  const back = (resumed.json() as { device: DeviceInfo }).device;
  assert.deepEqual([back.state, back.suspension], ['active', null], 'both reasons ended');
  const resumes = (await auditLog(portal)).filter((record) => record.call === 'resume_device');
  assert.equal(resumes.length, 1);
  // A check that resumes its own reason later finds the device not suspended: nothing changes.
  const late = await resumeDevice(ctx, { deviceId, by: 'jamf', onlyIfReason: 'jamf-group' });
  assert.equal(late.outcome, 'not-suspended');
});

test('GET /device answers the history of the device: registered, enrolled, suspended, resumed and retired, each with its reason, author and receipt', async (t) => {
  const portal = await startPortal(t);
  const device = await deviceWithConfiguration(portal, 'H-9');
  const key = await makeAdminKey(portal, 'night-desk', { scope: 'write', profiles: ['employees'] });
  const suspended = await portal.post('/suspend_device', { device_id: device.device_id, reason: 'lost' }, bearer(key));
  assert.equal(suspended.status, 200, suspended.text);
  assert.equal((await portal.post('/resume_device', { device_id: device.device_id })).status, 200);
  const retired = await portal.post('/retire_device', { device_id: device.device_id });
  assert.equal(retired.status, 200, retired.text);

  const answer = await portal.admin.deviceWithHistory(device.device_id);
  assert.equal(answer.device.state, 'retired');
  assert.deepEqual(
    answer.history.map((entry) => [entry.change, entry.state_before, entry.state_after, entry.by]),
    [
      ['registered', null, 'registered', 'secret'],
      ['enrolled', 'registered', 'active', 'secret'],
      ['suspended', 'active', 'suspended', 'night-desk'],
      ['resumed', 'suspended', 'active', 'secret'],
      ['retired', 'active', 'retired', 'secret'],
    ],
  );
  const suspension = answer.history[2];
  assert.equal(suspension?.reason, 'lost');
  assert.equal(suspension?.revocation_id, suspended.headers.get('vpn-portal-revocation'));
  assert.equal(answer.history[4]?.revocation_id, retired.headers.get('vpn-portal-revocation'));
  assert.ok(
    answer.history.every((entry, index) => index === 0 || (answer.history[index - 1]?.at ?? '') <= entry.at),
    'oldest first',
  );

  const guests = await makeAdminKey(portal, 'guests-viewer', { scope: 'read', profiles: ['guests'] });
  const refused = await portal.get('/device', { device_id: device.device_id }, bearer(guests));
  assert.equal(refused.status, 403, 'a key limited to other profiles sees neither the device nor its history');
  assert.doesNotMatch(refused.text, /lost/);
});

test('bad input answers 400, 404 or 409 with a clear reason and changes nothing', async (t) => {
  const portal = await startPortal(t);
  const device = await deviceWithConfiguration(portal, 'H-2');
  const retired = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'H-3',
  });
  await portal.admin.retireDevice(retired.device_id);
  const before = await deviceState(portal);
  const cases: [string, Record<string, string>, number, RegExp][] = [
    ['/suspend_device', {}, 400, /device_id/],
    ['/suspend_device', { device_id: 'nonsense' }, 400, /device_id/],
    ['/suspend_device', { device_id: device.device_id, reason: '' }, 400, /reason/],
    ['/suspend_device', { device_id: device.device_id, reason: 'a\u0007b' }, 400, /reason/],
    ['/suspend_device', { device_id: device.device_id, reason: 'x'.repeat(201) }, 400, /reason/],
    ['/suspend_device', { device_id: 'dev_000000000000000000000000' }, 404, /^no device with this "device_id"$/],
    ['/resume_device', { device_id: 'dev_000000000000000000000000' }, 404, /^no device with this "device_id"$/],
    [
      '/suspend_device',
      { device_id: retired.device_id },
      409,
      /is retired: a retired device can be neither suspended nor resumed/,
    ],
    [
      '/resume_device',
      { device_id: retired.device_id },
      409,
      /is retired: a retired device can be neither suspended nor resumed/,
    ],
  ];
  for (const [path, form, status, message] of cases) {
    const response = await portal.post(path, form);
    assert.equal(response.status, status, `${path} ${JSON.stringify(form)}: ${response.text}`);
    assert.match(errorBody(response.text), message, path);
  }
  assert.equal(await deviceState(portal), before);
});

test('a key limited to other profiles may not suspend or resume a device: 403, and nothing changes', async (t) => {
  const portal = await startPortal(t);
  const device = await deviceWithConfiguration(portal, 'H-4');
  const key = await makeAdminKey(portal, 'guests-desk', { scope: 'write', profiles: ['guests'] });
  const before = await deviceState(portal);
  for (const path of ['/suspend_device', '/resume_device']) {
    const response = await portal.post(path, { device_id: device.device_id }, bearer(key));
    assert.equal(response.status, 403, response.text);
    assert.equal(
      errorBody(response.text),
      'key "guests-desk" may not use profile "employees" (it is limited to: guests)',
    );
  }
  assert.equal(await deviceState(portal), before);
  const own = await makeAdminKey(portal, 'employees-desk', { scope: 'write', profiles: ['employees'] });
  const suspended = await portal.post('/suspend_device', { device_id: device.device_id }, bearer(own));
  assert.equal(suspended.status, 200, suspended.text);
  assert.equal((suspended.json() as { device: DeviceInfo }).device.suspension?.by, 'employees-desk');
});

test('suspending and resuming are audited, announced to webhooks and counted in the metrics by reason', async (t) => {
  const portal = await startPortal(t);
  await portal.admin.createWebhook({
    url: 'http://127.0.0.1:9/hook',
    event_types: 'device.suspended,device.resumed',
  });
  const device = await deviceWithConfiguration(portal, 'H-5');
  const other = await portal.admin.registerDevice({
    user_id: 'bob',
    profile_id: 'guests',
    platform: 'ios',
    serial: 'H-6',
  });
  const { revocationId } = await portal.admin.suspendDevice({ device_id: device.device_id });
  await portal.admin.resumeDevice(device.device_id);
  await portal.admin.suspendDevice({ device_id: other.device_id, reason: 'screen broken' });

  const rows = (await auditLog(portal)).filter((entry) => entry.call.endsWith('_device')).reverse();
  assert.deepEqual(
    rows.map((entry) => [entry.call, entry.keyName, entry.userId, entry.status, entry.parameters['reason']]),
    [
      ['register_device', 'secret', 'alice', 200, undefined],
      ['register_device', 'secret', 'bob', 200, undefined],
      ['suspend_device', 'secret', 'alice', 200, undefined],
      ['resume_device', 'secret', 'alice', 200, undefined],
      ['suspend_device', 'secret', 'bob', 200, 'screen broken'],
    ],
  );
  assert.deepEqual(rows[2]?.connectionIds, [], 'a suspension keeps the configurations: none is created or deleted');

  const deliveries = await portal.portal.ctx.db
    .selectFrom('webhook_deliveries')
    .select(['event_type', 'payload'])
    .orderBy('delivery_id')
    .execute();
  const data = deliveries.map(
    (row) => [row.event_type, (JSON.parse(row.payload) as { data: Record<string, unknown> }).data] as const,
  );
  assert.deepEqual(
    data.map(([type, body]) => [type, body['device_id'], body['reason'], body['by'], body['revocation_id']]),
    [
      ['device.suspended', device.device_id, 'administrator', 'secret', revocationId],
      ['device.resumed', device.device_id, 'administrator', 'secret', undefined],
      ['device.suspended', other.device_id, 'screen broken', 'secret', null],
    ],
  );
  assert.equal(data[0]?.[1]['serial'], 'H-5');

  const text = await (await fetch(portal.portal.metricsUrl ?? '')).text();
  assert.match(text, /^vpn_portal_suspended_devices\{reason="other"\} 1$/m, 'free text is counted as other');
  assert.doesNotMatch(text, /vpn_portal_suspended_devices\{reason="administrator"\}/, 'that one was resumed');
  assert.match(text, /^vpn_portal_device_suspensions_total\{reason="administrator"\} 1$/m);
  assert.match(text, /^vpn_portal_device_suspensions_total\{reason="other"\} 1$/m);
  assert.match(text, /vpn_portal_devices\{platform="ios",state="suspended",identity="token"\} 1/);
});
