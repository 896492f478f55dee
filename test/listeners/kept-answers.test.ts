// The kept answers (Idempotency-Key) of what a change revokes or replaces are dropped by that
// change itself, in its transaction: a destroy (WireGuard and OpenVPN alike), a retired device, a
// device's configuration replaced by a new create; the enrollment tokens disable_user, destroy
// and retire_device end; an admin key revoked, a webhook deleted or its secret rotated. The
// private key or secret is not in the database a moment after the change committed, before any
// retry. A suspended device's configuration comes back when it is resumed, so its answer stays;
// other keys' answers stay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { employeesProfile } from '../support/admin-keys.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../support/test-portal.js';

const staff = {
  profileId: 'staff',
  displayName: 'Staff',
  hostName: 'vpn.example.org',
  oRangeFour: '10.60.0.0/24',
  oRangeSix: 'fd60::/64',
  nodeUrl: UNREACHABLE_NODE,
};

/** Each kept answer's state, and whether its sealed answer is still stored. */
async function keptAnswers(portal: TestPortal): Promise<Record<string, string>> {
  const rows = await portal.portal.ctx.db
    .selectFrom('idempotency_records')
    .select(['idempotency_key', 'state', 'answer', 'handed_out_kind'])
    .orderBy('idempotency_key')
    .execute();
  return Object.fromEntries(
    rows.map((row) => [
      row.idempotency_key,
      `${row.state}${row.answer === null ? '' : ' with answer'}${row.handed_out_kind === null ? ', no configuration' : ''}`,
    ]),
  );
}

function create(portal: TestPortal, form: Record<string, string>, key: string, accept?: string) {
  return portal.post('/create', form, { 'idempotency-key': key, ...(accept === undefined ? {} : { accept }) });
}

test('a destroy drops the kept answers of every configuration of the user, WireGuard and OpenVPN, and no one else’s', async (t) => {
  const portal = await startTestPortal({ config: { ProfileList: [employeesProfile, staff] } });
  t.after(() => portal.close());
  for (const [form, key, accept] of [
    [{ user_id: 'alice', profile_id: 'employees' }, 'alice-1', undefined],
    [{ user_id: 'alice', profile_id: 'employees' }, 'alice-2', undefined],
    [{ user_id: 'alice', profile_id: 'staff' }, 'alice-ovpn', 'application/x-openvpn-profile'],
    [{ user_id: 'bob', profile_id: 'employees' }, 'bob-1', undefined],
  ] as const)
    assert.equal((await create(portal, form, key, accept)).status, 200, key);
  const destroy = await portal.post('/destroy', { user_id: 'alice' }, { 'idempotency-key': 'leaver' });
  assert.equal(destroy.status, 204);
  assert.deepEqual(await keptAnswers(portal), {
    'alice-1': 'revoked',
    'alice-2': 'revoked',
    'alice-ovpn': 'revoked',
    'bob-1': 'done with answer',
    // destroy's own answer (a 204) names no configuration and is kept as it was.
    leaver: 'done with answer, no configuration',
  });
});

test('retiring a device, or replacing its configuration, drops the kept answer; suspending it does not', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const phone = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'ios',
    serial: 'PHONE-1',
  });
  const laptop = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'LAPTOP-1',
  });
  const forDevice = (deviceId: string) => ({ user_id: 'alice', profile_id: 'employees', device_id: deviceId });
  const wireGuard = 'application/x-wireguard-profile';
  assert.equal((await create(portal, forDevice(phone.device_id), 'phone-1', wireGuard)).status, 200);
  assert.equal((await create(portal, forDevice(laptop.device_id), 'laptop-1', wireGuard)).status, 200);

  await portal.admin.suspendDevice({ device_id: laptop.device_id });
  assert.equal((await keptAnswers(portal))['laptop-1'], 'done with answer', 'a suspension is undone by resume');
  await portal.admin.resumeDevice(laptop.device_id);

  // A new configuration for the phone replaces its first one.
  assert.equal((await create(portal, forDevice(phone.device_id), 'phone-2', wireGuard)).status, 200);
  assert.deepEqual(await keptAnswers(portal), {
    'laptop-1': 'done with answer',
    'phone-1': 'revoked',
    'phone-2': 'done with answer',
  });
  await portal.admin.retireDevice(laptop.device_id);
  assert.equal((await keptAnswers(portal))['laptop-1'], 'revoked');
  const retry = await create(portal, forDevice(phone.device_id), 'phone-1', wireGuard);
  assert.equal(retry.status, 410, retry.text);
});

test('disable_user, destroy and retire_device drop the kept answers of the enrollment tokens they revoke or delete, and no others', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const laptop = await portal.admin.registerDevice({
    user_id: 'dave',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'LAPTOP-2',
  });
  for (const [userId, key, more] of [
    ['alice', 'alice-token', {}],
    ['bob', 'bob-token', {}],
    ['carol', 'carol-token', {}],
    ['dave', 'dave-laptop', { device_id: laptop.device_id }],
    ['dave', 'dave-other', {}],
  ] as const) {
    const made = await portal.post(
      '/enrollment_token',
      { user_id: userId, profile_id: 'employees', ...more },
      { 'idempotency-key': key },
    );
    assert.equal(made.status, 200, `${key}: ${made.text}`);
  }
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.equal((await portal.post('/destroy', { user_id: 'bob' })).status, 204);
  await portal.admin.retireDevice(laptop.device_id);
  assert.deepEqual(await keptAnswers(portal), {
    'alice-token': 'revoked',
    'bob-token': 'revoked',
    'carol-token': 'done with answer',
    'dave-laptop': 'revoked',
    'dave-other': 'done with answer',
  });
});

test('revoking an admin key, deleting a webhook or rotating its secret drops the kept answers that handed them out', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const post = async (path: string, form: Record<string, string>, key?: string) => {
    const answer = await portal.post(path, form, key === undefined ? {} : { 'idempotency-key': key });
    assert.ok(answer.status < 300, `${path}: ${answer.text}`);
    return answer;
  };
  await post('/create_admin_key', { name: 'ops', scope: 'read' }, 'ops');
  await post('/create_admin_key', { name: 'ci', scope: 'read' }, 'ci');
  const hook = { url: 'https://192.0.2.1/hooks', event_types: '*' };
  const first = (await post('/create_webhook', hook, 'hook-1')).json() as { webhook: { webhook_id: string } };
  const second = (await post('/create_webhook', hook, 'hook-2')).json() as { webhook: { webhook_id: string } };
  await post('/revoke_admin_key', { name: 'ops' });
  await post('/delete_webhook', { webhook_id: first.webhook.webhook_id });
  await post('/rotate_webhook_secret', { webhook_id: second.webhook.webhook_id });
  assert.deepEqual(await keptAnswers(portal), {
    ci: 'done with answer',
    'hook-1': 'revoked',
    'hook-2': 'replaced',
    ops: 'revoked',
  });
});
