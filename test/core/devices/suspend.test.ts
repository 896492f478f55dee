// Suspending and resuming a device, the use cases on a real portal and database: the state moves
// registered/active → suspended → back, retired stays final (409), every change is in the device's
// history with its reason and author, both are idempotent, a key limited to profiles reaches only
// its devices, a suspended device's configurations are out of everything that puts configurations
// on nodes (the reconcile's wanted peers, the OpenVPN clients, the listing, the connect check) and
// back after a resume, and a resume for a reason (or an author) resumes only a suspension for
// that reason (by that author); a second author's reason stands beside the first, and the device
// stays suspended until both have ended (or an administrator resumes it).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PortalError } from '../../../src/core/errors.js';
import { resumeDevice, suspendDevice } from '../../../src/core/devices/index.js';
import { authorizeOpenVpnConnect } from '../../../src/core/sessions/index.js';
import type { PortalContext } from '../../../src/core/context.js';
import type { AdminCall } from '../../../src/core/admin-call.js';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import type { DeviceInfo } from '../../../src/protocol/admin-api.js';
import { asDeviceId, asNodeNumber, asProfileId, type DeviceId } from '../../../src/shared/ids.js';
import { formatAtom } from '../../../src/shared/time.js';
import { activeCertificates } from '../../../src/storage/certificates.js';
import { deviceHistory } from '../../../src/storage/device-history.js';
import { peersWantedOnNode } from '../../../src/storage/wg-peers.js';
import { employeesProfile } from '../../support/admin-keys.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';

const OPENVPN = 'application/x-openvpn-profile';
const WIREGUARD = 'application/x-wireguard-profile';

/** `employees` runs WireGuard and OpenVPN, `guests` WireGuard, on nodes that do not answer (the database is the truth). */
const config: Partial<PortalConfigFile> = {
  ProfileList: [
    { ...employeesProfile, oRangeFour: '10.60.0.0/24', oRangeSix: 'fd60::/64' },
    {
      profileId: 'guests',
      displayName: 'Guests',
      hostName: 'vpn.example.org',
      wRangeFour: '10.45.0.0/24',
      wRangeSix: 'fd45::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
  ],
};

async function startPortal(t: { after: (fn: () => Promise<void>) => void }): Promise<TestPortal> {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  return portal;
}

async function registered(portal: TestPortal, serial: string, profileId = 'employees'): Promise<DeviceId> {
  const device = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: profileId,
    platform: 'linux',
    serial,
  });
  return asDeviceId(device.device_id);
}

/** A WireGuard and an OpenVPN configuration of the device; their connection ids. */
async function withConfigurations(portal: TestPortal, deviceId: DeviceId): Promise<{ wg: string; ovpn: string }> {
  const wg = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'guests', device_id: deviceId },
    { accept: WIREGUARD },
  );
  assert.equal(wg.status, 200, wg.text);
  const ovpn = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees', device_id: deviceId },
    { accept: OPENVPN },
  );
  assert.equal(ovpn.status, 200, ovpn.text);
  const device = await portal.admin.device(deviceId);
  const id = (proto: string) =>
    device.configurations.find((configuration) => configuration.vpn_proto === proto)?.connection_id ?? '';
  return { wg: id('wireguard'), ovpn: id('openvpn') };
}

/** What the nodes would be given now: the reconcile's wanted peers of node 0, the OpenVPN clients allowed. */
async function onNodes(portal: TestPortal): Promise<string[]> {
  const ctx = portal.portal.ctx;
  const now = formatAtom(ctx.clock.now());
  const peers = await peersWantedOnNode(ctx.db, { now, nodeNumber: asNodeNumber(0) });
  const certificates = await activeCertificates(ctx.db, { now });
  return [...peers.map((peer) => peer.publicKey), ...certificates.map((certificate) => certificate.commonName)].sort();
}

/** The WireGuard configurations `connection_list?show_all=on` lists (the in-memory listing). */
async function listed(portal: TestPortal): Promise<string[]> {
  const listing = await portal.admin.connectionList(true);
  return Object.values(listing)
    .flat()
    .filter((connection) => connection.vpn_proto === 'wireguard')
    .map((connection) => connection.connection_id)
    .sort();
}

/** The node's question when the OpenVPN client connects. */
async function connect(portal: TestPortal, commonName: string): Promise<string> {
  const answer = await portal.request(`${portal.nodeApiUrl}/connect`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`,
      'x-node-number': '0',
    },
    body: new URLSearchParams({
      profile_id: 'employees',
      common_name: commonName,
      originating_ip: '192.0.2.7',
      ip_four: '10.60.0.9',
      ip_six: 'fd60::9',
    }),
  });
  return answer.text;
}

/** The portal's context as a call of an admin key limited to these profiles makes it. */
function limitedTo(ctx: PortalContext, profiles: readonly string[]): PortalContext {
  const call: AdminCall = {
    caller: {
      kind: 'admin-key',
      sourceAddress: '127.0.0.1',
      key: {
        keyId: 'k1',
        name: 'guests-desk',
        lineage: 'k1',
        scope: 'write',
        profiles: profiles.map(asProfileId),
        allowList: null,
        expiresAt: null,
      },
    },
    name: 'suspend_device',
    parameters: {},
    successStatus: 200,
  };
  return { ...ctx, call, events: ctx.events.forCall(call) };
}

async function refusal(work: Promise<unknown>): Promise<PortalError> {
  try {
    await work;
  } catch (error) {
    if (error instanceof PortalError) return error;
    throw error;
  }
  assert.fail('expected a refusal');
}

describe('suspending and resuming a device', () => {
  test('suspending keeps the configurations but takes them out of everything the nodes are given; resuming brings them back', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const deviceId = await registered(portal, 'S-1');
    const { wg, ovpn } = await withConfigurations(portal, deviceId);
    await portal.admin.create({ user_id: 'alice', profile_id: 'guests' }, WIREGUARD);
    const other =
      (await portal.admin.userConfigurationList('alice'))
        .map((configuration) => configuration.connection_id)
        .find((id) => id !== wg && id !== ovpn) ?? '';
    assert.deepEqual(await onNodes(portal), [wg, ovpn, other].sort());
    assert.equal(await connect(portal, ovpn), 'OK');
    // The listing is built (and kept in memory) before the suspension: it must follow it.
    assert.deepEqual(await listed(portal), [wg, other].sort());

    const suspended = await suspendDevice(ctx, { deviceId, by: 'desk' });
    assert.equal(suspended.changed, true);
    assert.notEqual(suspended.revocationId, null, 'its configurations leaving the nodes has a receipt');
    assert.equal(suspended.device.device.state, 'suspended');
    assert.equal(suspended.device.device.suspension?.reason, 'administrator');
    assert.equal(suspended.device.device.suspension?.by, 'desk');
    assert.equal(suspended.device.configurations.length, 2, 'the configurations are kept');
    assert.deepEqual(await onNodes(portal), [other], "only the user's other configuration is wanted");
    assert.equal(await connect(portal, ovpn), 'ERR', 'the node is told to refuse the client');
    const decision = await authorizeOpenVpnConnect(ctx, {
      nodeNumber: asNodeNumber(0),
      profileId: 'employees',
      commonName: ovpn,
      originatingIp: null,
      ipFour: '10.60.0.9',
      ipSix: 'fd60::9',
      reauth: false,
      nodeGaveUp: new AbortController().signal,
    });
    assert.deepEqual(decision, { allowed: false, reason: 'device suspended' });
    assert.deepEqual(await listed(portal), [other], 'the connection listing leaves them out too');

    const resumed = await resumeDevice(ctx, { deviceId, by: 'desk' });
    assert.equal(resumed.outcome, 'resumed');
    assert.equal(resumed.device.device.state, 'active');
    assert.equal(resumed.device.device.suspension, null);
    assert.deepEqual(await onNodes(portal), [wg, ovpn, other].sort());
    assert.equal(await connect(portal, ovpn), 'OK');
    assert.deepEqual(await listed(portal), [wg, other].sort());
  });

  test('every change is in the history with its states, reason, author and receipt, oldest first', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const deviceId = await registered(portal, 'S-2');
    await suspendDevice(ctx, { deviceId, reason: 'lost on a train', by: 'desk' });
    await resumeDevice(ctx, { deviceId, by: 'desk' });
    await withConfigurations(portal, deviceId);
    const suspended = await suspendDevice(ctx, { deviceId, reason: 'noncompliant', by: 'mdm' });
    await portal.admin.retireDevice(deviceId);
    const history = await deviceHistory(ctx.db, deviceId);
    assert.deepEqual(
      history.map((entry) => [entry.change, entry.stateBefore, entry.stateAfter, entry.reason, entry.by]),
      [
        ['registered', null, 'registered', null, 'secret'],
        ['suspended', 'registered', 'suspended', 'lost on a train', 'desk'],
        ['resumed', 'suspended', 'registered', 'lost on a train', 'desk'],
        ['enrolled', 'registered', 'active', null, 'secret'],
        ['enrolled', 'active', 'active', null, 'secret'],
        ['suspended', 'active', 'suspended', 'noncompliant', 'mdm'],
        ['retired', 'suspended', 'retired', null, 'secret'],
      ],
    );
    assert.equal(history[1]?.revocationId, null, 'a device without configurations has no receipt');
    assert.equal(history[5]?.revocationId, suspended.revocationId);
    assert.ok(history.every((entry, index) => index === 0 || (history[index - 1]?.at ?? '') <= entry.at));
  });

  test('suspending a suspended device and resuming one not suspended change nothing; the repeated suspension answers its receipt', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const deviceId = await registered(portal, 'S-3');
    await withConfigurations(portal, deviceId);
    const notSuspended = await resumeDevice(ctx, { deviceId, by: 'desk' });
    assert.equal(notSuspended.outcome, 'not-suspended');
    const first = await suspendDevice(ctx, { deviceId, by: 'desk' });
    const history = await deviceHistory(ctx.db, deviceId);
    const again = await suspendDevice(ctx, { deviceId, by: 'mdm' });
    assert.equal(again.changed, false);
    assert.equal(again.reasonAdded, false, 'the reason stands already');
    assert.equal(again.revocationId, first.revocationId);
    assert.deepEqual(again.device.device.suspension, first.device.device.suspension, 'the first author stays');
    assert.deepEqual(await deviceHistory(ctx.db, deviceId), history);
    const receipts = await ctx.db.selectFrom('revocations').select('revocation_id').execute();
    assert.equal(receipts.length, 1, 'one receipt for the one suspension');
  });

  test('a retired device can be neither suspended nor resumed: 409, and nothing changes', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const deviceId = await registered(portal, 'S-4');
    await portal.admin.retireDevice(deviceId);
    const history = await deviceHistory(ctx.db, deviceId);
    // One after the other: each call is made only when the one before was refused.
    for (const work of [
      () => suspendDevice(ctx, { deviceId, by: 'desk' }),
      () => resumeDevice(ctx, { deviceId, by: 'desk' }),
    ]) {
      const error = await refusal(work());
      assert.equal(error.code, 'conflict');
      assert.match(error.message, /is retired: a retired device can be neither suspended nor resumed/);
    }
    assert.deepEqual(await deviceHistory(ctx.db, deviceId), history);
    assert.equal((await portal.admin.device(deviceId)).state, 'retired');
  });

  test('an unknown device answers no-such-device and a bad reason invalid-parameter', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const unknown = asDeviceId('dev_000000000000000000000000');
    assert.equal((await refusal(suspendDevice(ctx, { deviceId: unknown, by: 'desk' }))).code, 'no-such-device');
    assert.equal((await refusal(resumeDevice(ctx, { deviceId: unknown, by: 'desk' }))).code, 'no-such-device');
    const deviceId = await registered(portal, 'S-5');
    for (const reason of ['', 'x'.repeat(201), 'line\nbreak']) {
      assert.equal((await refusal(suspendDevice(ctx, { deviceId, reason, by: 'desk' }))).code, 'invalid-parameter');
    }
    assert.equal((await portal.admin.device(deviceId)).state, 'registered');
  });

  test('a key limited to some profiles suspends and resumes only devices of its profiles', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const employees = await registered(portal, 'S-6', 'employees');
    const guests = await registered(portal, 'S-7', 'guests');
    const limited = limitedTo(ctx, ['guests']);
    for (const work of [
      () => suspendDevice(limited, { deviceId: employees, by: 'guests-desk' }),
      () => resumeDevice(limited, { deviceId: employees, by: 'guests-desk' }),
    ]) {
      const error = await refusal(work());
      assert.equal(error.code, 'not-allowed');
      assert.match(error.message, /may not use profile "employees"/);
    }
    assert.equal((await portal.admin.device(employees)).state, 'registered');
    assert.equal(
      (await suspendDevice(limited, { deviceId: guests, by: 'guests-desk' })).device.device.state,
      'suspended',
    );
    assert.equal((await resumeDevice(limited, { deviceId: guests, by: 'guests-desk' })).outcome, 'resumed');
  });

  test('a resume for a reason resumes only a suspension for that reason', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const byHand = await registered(portal, 'S-8');
    const byMdm = await registered(portal, 'S-9');
    await suspendDevice(ctx, { deviceId: byHand, by: 'desk' });
    await suspendDevice(ctx, { deviceId: byMdm, reason: 'noncompliant', by: 'mdm' });
    const kept = await resumeDevice(ctx, { deviceId: byHand, by: 'mdm', onlyIfReason: ['noncompliant', 'stale'] });
    assert.equal(kept.outcome, 'other-reason');
    assert.equal(kept.device.device.state, 'suspended', 'a device suspended by hand stays suspended');
    const resumed = await resumeDevice(ctx, { deviceId: byMdm, by: 'mdm', onlyIfReason: 'noncompliant' });
    assert.equal(resumed.outcome, 'resumed');
    assert.equal(resumed.device.device.state, 'registered');
  });

  test('a resume for an author resumes only a suspension that author made, whatever its reason', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const byHand = await registered(portal, 'S-12');
    const byPortal = await registered(portal, 'S-13');
    await suspendDevice(ctx, { deviceId: byHand, reason: 'noncompliant', by: 'desk' });
    await suspendDevice(ctx, { deviceId: byPortal, reason: 'noncompliant', by: '(portal)' });
    const request = { by: '(portal)', onlyIfReason: ['noncompliant', 'stale'], onlyIfBy: '(portal)' };
    const kept = await resumeDevice(ctx, { deviceId: byHand, ...request });
    assert.equal(kept.outcome, 'other-reason');
    assert.equal(kept.device.device.state, 'suspended', 'suspended by hand with the same reason: stays');
    assert.equal((await resumeDevice(ctx, { deviceId: byPortal, ...request })).outcome, 'resumed');
  });

  test("a second author's reason stands beside the first: a resume for one reason keeps the device off the nodes, an administrator's resume ends every reason", async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const deviceId = await registered(portal, 'S-14');
    const { wg, ovpn } = await withConfigurations(portal, deviceId);
    const first = await suspendDevice(ctx, { deviceId, reason: 'noncompliant', by: '(portal)' });
    const second = await suspendDevice(ctx, { deviceId, reason: 'jamf-group', by: 'jamf' });
    assert.equal(second.changed, false, 'nothing more leaves the nodes');
    assert.equal(second.reasonAdded, true);
    assert.equal(second.revocationId, first.revocationId, "the suspension's receipt");
    const shown = second.device.device.suspension;
    assert.deepEqual([shown?.reason, shown?.by], ['noncompliant', '(portal)'], 'the first suspension is shown');
    assert.deepEqual(
      shown?.others.map((other) => [other.reason, other.by]),
      [['jamf-group', 'jamf']],
    );
    const receipts = await ctx.db.selectFrom('revocations').select('revocation_id').execute();
    assert.equal(receipts.length, 1, 'one receipt for the one suspension');

    const ended = await resumeDevice(ctx, { deviceId, by: '(portal)', onlyIfReason: 'noncompliant' });
    assert.equal(ended.outcome, 'still-suspended');
    const left = ended.device.device.suspension;
    assert.deepEqual([left?.reason, left?.by, left?.others], ['jamf-group', 'jamf', []], 'the reason left is shown');
    assert.equal(left?.since, shown?.others[0]?.since, 'with its own time');
    assert.deepEqual(await onNodes(portal), [], 'nothing goes back on the nodes');

    await suspendDevice(ctx, { deviceId, reason: 'noncompliant', by: '(portal)' });
    const byHand = await resumeDevice(ctx, { deviceId, by: 'desk' });
    assert.equal(byHand.outcome, 'resumed', "an administrator's resume ends both reasons");
    assert.equal(byHand.device.device.state, 'active');
    assert.deepEqual(await onNodes(portal), [wg, ovpn].sort());
    assert.deepEqual(
      (await deviceHistory(ctx.db, deviceId))
        .slice(3)
        .map((entry) => [entry.change, entry.stateBefore, entry.stateAfter, entry.reason, entry.by]),
      [
        ['suspended', 'active', 'suspended', 'noncompliant', '(portal)'],
        ['suspended', 'suspended', 'suspended', 'jamf-group', 'jamf'],
        ['resumed', 'suspended', 'suspended', 'noncompliant', '(portal)'],
        ['suspended', 'suspended', 'suspended', 'noncompliant', '(portal)'],
        ['resumed', 'suspended', 'active', 'jamf-group', 'desk'],
      ],
    );
  });

  test('an administrator who takes over an automatic suspension keeps the device suspended when the automatic reason ends', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const deviceId = await registered(portal, 'S-15');
    await suspendDevice(ctx, { deviceId, reason: 'jamf-group', by: 'jamf' });
    const taken = await suspendDevice(ctx, { deviceId, reason: 'lost', by: 'desk', byHand: true });
    assert.equal(taken.reasonAdded, false);
    const suspension = taken.device.device.suspension;
    assert.deepEqual([suspension?.reason, suspension?.by], ['lost', 'desk']);
    assert.deepEqual(
      suspension?.others.map((other) => [other.reason, other.by]),
      [['jamf-group', 'jamf']],
      'the reason it replaced still stands',
    );
    const joined = await resumeDevice(ctx, { deviceId, by: 'jamf', onlyIfReason: 'jamf-group' });
    assert.equal(joined.outcome, 'still-suspended');
    assert.deepEqual([joined.device.device.suspension?.reason, joined.device.device.suspension?.others], ['lost', []]);
    assert.equal((await resumeDevice(ctx, { deviceId, by: 'desk' })).outcome, 'resumed');
  });

  test('a resume leaves expired configurations, and those of a user disabled meanwhile, off the nodes', async (t) => {
    const portal = await startPortal(t);
    const ctx = portal.portal.ctx;
    const deviceId = await registered(portal, 'S-10');
    const { wg, ovpn } = await withConfigurations(portal, deviceId);
    await suspendDevice(ctx, { deviceId, by: 'desk' });
    await portal.admin.disableUser('alice');
    await resumeDevice(ctx, { deviceId, by: 'desk' });
    assert.deepEqual(await onNodes(portal), [], 'the user is disabled');
    await portal.admin.enableUser('alice');
    assert.deepEqual(await onNodes(portal), [wg, ovpn].sort());

    await suspendDevice(ctx, { deviceId, by: 'desk' });
    await ctx.db.updateTable('wg_peers').set({ expires_at: '2020-01-01T00:00:00+00:00' }).execute();
    await resumeDevice(ctx, { deviceId, by: 'desk' });
    assert.deepEqual(await onNodes(portal), [ovpn]);
  });

  test('a suspended device gets no new configuration until it is resumed: 409', async (t) => {
    const portal = await startPortal(t);
    const deviceId = await registered(portal, 'S-11');
    await suspendDevice(portal.portal.ctx, { deviceId, by: 'desk' });
    const refused = await portal.post(
      '/create',
      { user_id: 'alice', profile_id: 'guests', device_id: deviceId },
      { accept: WIREGUARD },
    );
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.text, /is suspended \(administrator\): resume it before it gets a new configuration/);
    assert.deepEqual((await portal.admin.device(deviceId)).configurations, []);
    const device: DeviceInfo = await portal.admin.device(deviceId);
    assert.equal(device.state, 'suspended');
  });
});
