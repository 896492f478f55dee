// The mapping of directory groups to profiles (`scim.groupProfiles`) on a real database: a
// provisioned user keeps a mapped profile's configurations while any group of theirs grants it,
// loses them (a receipt each) when the last such group lets them go — by removal, rename or
// deletion — and profiles no group names are left alone; as are users the directory never
// provisioned, and a user destroyed through the Admin API takes its SCIM link with it. A check
// that fails midway fails not the change, and is finished by the reconcile pass, by the groups
// of then, and only ever takes. A device registering itself does not enter a mapped profile its
// user's groups do not grant, also when a group change races the registration or the second
// read of the groups after it fails.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from 'kysely';
import type { AdminCall } from '../../../src/core/admin-call.js';
import type { PortalContext } from '../../../src/core/context.js';
import {
  createDirectoryGroup,
  createDirectoryUser,
  deleteDirectoryGroup,
  directoryGroup,
  GROUP_PROFILES_CALL,
  PENDING_CHECK_GRACE_MS,
  replaceDirectoryGroup,
} from '../../../src/core/directory/index.js';
import { type CertificateEnrollment, enrollByCertificate } from '../../../src/core/enrollment/index.js';
import { APPLIED_MAPPING_KEY, canonicalMapping } from '../../../src/core/directory/mapping-change.js';
import { asProfileId, asUserId } from '../../../src/shared/ids.js';
import { writeState } from '../../../src/storage/portal-state.js';
import { removeScimUserFromGroups } from '../../../src/storage/scim-groups.js';
import { clearProfileCheck, noteProfileChecks, pendingProfileChecks } from '../../../src/storage/scim-users.js';
import { formatAtom } from '../../../src/shared/time.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { auditLog, ManualClock } from '../../support/admin-keys.js';
import { MdmCa } from '../../support/mdm-ca.js';
import { UNREACHABLE_NODE, startTestPortal, type TestPortal } from '../../support/test-portal.js';

const MAPPING = { Guests: ['guests'], Visitors: ['guests'], Contractors: ['contractors'] };

async function stand(
  t: TestContext,
  clock?: ManualClock,
  more: Partial<PortalConfigFile> = {},
): Promise<{ portal: TestPortal; ctx: PortalContext }> {
  const profile = (profileId: string, range: number) => ({
    profileId,
    displayName: profileId,
    hostName: 'vpn.example.org',
    wRangeFour: `10.${range}.0.0/24`,
    wRangeSix: `fd${range}::/64`,
    nodeUrl: UNREACHABLE_NODE,
  });
  const portal = await startTestPortal({
    config: {
      ProfileList: [profile('employees', 44), profile('guests', 45), profile('contractors', 46)],
      scim: { groupProfiles: MAPPING },
      ...more,
    },
    ...(clock === undefined ? {} : { clock }),
  });
  t.after(() => portal.close());
  const base = portal.portal.ctx;
  const call: AdminCall = {
    caller: { kind: 'command-line', sourceAddress: 'local' },
    name: 'scim test',
    parameters: {},
    successStatus: 200,
  };
  return { portal, ctx: { ...base, call, events: base.events.forCall(call) } };
}

async function profilesOf(portal: TestPortal, userId: string): Promise<string[]> {
  return (await portal.admin.userConfigurationList(userId)).map((configuration) => configuration.profile_id).sort();
}

async function provision(ctx: PortalContext, portal: TestPortal, userName: string): Promise<string> {
  const { user } = await createDirectoryUser(ctx, { userName, externalId: null, active: true, attributes: {} });
  for (const profileId of ['employees', 'guests', 'contractors'])
    await portal.admin.create({ user_id: userName, profile_id: profileId });
  return user.id;
}

test('a user keeps a mapped profile while any group grants it, and loses it with a receipt when the last one lets go', async (t) => {
  const { portal, ctx } = await stand(t);
  const alice = await provision(ctx, portal, 'alice');
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [alice] });
  const visitors = await createDirectoryGroup(ctx, { displayName: 'Visitors', externalId: null, memberIds: [alice] });
  const contractors = await createDirectoryGroup(ctx, {
    displayName: 'Contractors',
    externalId: null,
    memberIds: [alice],
  });

  const outOfGuests = await replaceDirectoryGroup(ctx, guests.id, {
    displayName: 'Guests',
    externalId: null,
    memberIds: [],
  });
  assert.deepEqual(outOfGuests.revocationIds, [], 'Visitors still grants guests');
  assert.deepEqual(await profilesOf(portal, 'alice'), ['contractors', 'employees', 'guests']);

  const outOfVisitors = await replaceDirectoryGroup(ctx, visitors.id, {
    displayName: 'Visitors',
    externalId: null,
    memberIds: [],
  });
  assert.equal(outOfVisitors.revocationIds.length, 1);
  assert.deepEqual(await profilesOf(portal, 'alice'), ['contractors', 'employees']);
  const receipts = await portal.admin.revocations();
  assert.deepEqual(
    receipts
      .filter((receipt) => outOfVisitors.revocationIds.some((id) => id === receipt.revocation_id))
      .map((receipt) => receipt.reason),
    ['delete_connection'],
  );

  // Renamed to a name that grants nothing: its members lose what it granted.
  const renamed = await replaceDirectoryGroup(ctx, contractors.id, {
    displayName: 'Former contractors',
    externalId: null,
    memberIds: [alice],
  });
  assert.equal(renamed.revocationIds.length, 1);
  assert.deepEqual(await profilesOf(portal, 'alice'), ['employees'], 'employees is in no mapping: untouched');
});

test('after a group is deleted its members keep only what their other groups grant; a user the directory never provisioned is left alone', async (t) => {
  const { portal, ctx } = await stand(t);
  const bob = await provision(ctx, portal, 'bob');
  const carol = await provision(ctx, portal, 'carol');
  await portal.admin.create({ user_id: 'dave', profile_id: 'guests' });
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [bob, carol] });
  await createDirectoryGroup(ctx, { displayName: 'Visitors', externalId: null, memberIds: [carol] });

  // In no group now, bob keeps nothing of the mapped profiles; carol keeps what Visitors grants.
  const receipts = await deleteDirectoryGroup(ctx, guests.id);
  assert.equal(receipts.length, 3, "bob's guests and contractors configurations, carol's contractors one");
  assert.deepEqual(await profilesOf(portal, 'bob'), ['employees']);
  assert.deepEqual(await profilesOf(portal, 'carol'), ['employees', 'guests']);
  assert.deepEqual(await profilesOf(portal, 'dave'), ['guests']);
});

test('a user destroyed through the Admin API leaves its groups with its SCIM link', async (t) => {
  const { portal, ctx } = await stand(t);
  const erin = await provision(ctx, portal, 'erin');
  const group = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [erin] });
  await portal.admin.destroy('erin');
  assert.deepEqual((await directoryGroup(ctx, group.id)).members, []);
  assert.deepEqual(await portal.portal.ctx.db.selectFrom('scim_users').selectAll().execute(), []);
});

test('a check that fails midway leaves the change made and answered, stays noted, and the next reconcile pass finishes it, by the groups of then', async (t) => {
  const clock = new ManualClock();
  const { portal, ctx } = await stand(t, clock);
  const ids: string[] = [];
  for (const userName of ['alice', 'bob', 'carol', 'dave']) ids.push(await provision(ctx, portal, userName));
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: ids });
  // The write of bob's first deletion fails, as a database refusing it would: a real step of
  // the change, through the events seam's approval.
  let refusing = true;
  portal.portal.ctx.events.approval(async (event) => {
    if (refusing && event.type === 'configuration.deleted' && event.configuration.userId === 'bob')
      throw new Error('the database refused the write');
  });
  const pending = async () =>
    (
      await portal.portal.ctx.db
        .selectFrom('scim_users')
        .select('user_id')
        .where('profile_check', 'is not', null)
        .orderBy('user_id')
        .execute()
    ).map((row) => row.user_id);
  const byPass = async () =>
    (await auditLog(portal))
      .filter((record) => record.call === GROUP_PROFILES_CALL)
      .map((record) => [record.keyName, record.userId, record.connectionIds.length])
      .sort();

  const receipts = await deleteDirectoryGroup(ctx, guests.id);
  assert.equal(receipts.length, 2, "alice's two, checked before the failure");
  assert.deepEqual(await portal.portal.ctx.db.selectFrom('scim_groups').selectAll().execute(), [], 'deleted');
  assert.deepEqual(await profilesOf(portal, 'alice'), ['employees'], 'checked before the failure');
  for (const userName of ['bob', 'carol', 'dave'])
    assert.deepEqual(await profilesOf(portal, userName), ['contractors', 'employees', 'guests'], userName);
  assert.deepEqual(await pending(), ['bob', 'carol', 'dave']);

  // Carol is in a group granting guests again: the pass goes by that, not by the failed change.
  await createDirectoryGroup(ctx, { displayName: 'Visitors', externalId: null, memberIds: [ids[2] ?? ''] });
  refusing = false;
  // No check of the failed change runs for them any more: the next pass takes them, without
  // waiting the grace that keeps it off a request's own checks.
  await portal.reconcile();
  assert.deepEqual(await profilesOf(portal, 'bob'), ['employees']);
  assert.deepEqual(await profilesOf(portal, 'carol'), ['employees', 'guests']);
  assert.deepEqual(await profilesOf(portal, 'dave'), ['employees']);
  assert.deepEqual(await pending(), []);
  const expected = [
    ['(portal)', 'bob', 1],
    ['(portal)', 'bob', 1],
    ['(portal)', 'carol', 1],
    ['(portal)', 'dave', 1],
    ['(portal)', 'dave', 1],
  ];
  assert.deepEqual(await byPass(), expected);
  await portal.reconcile();
  assert.deepEqual(await byPass(), expected, 'done once');
});

test('a check run again gives back nothing and takes nothing more, and the end of an older check leaves a later change its note', async (t) => {
  const clock = new ManualClock();
  const { portal, ctx } = await stand(t, clock);
  const erin = await provision(ctx, portal, 'erin');
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [erin] });
  const taken = await replaceDirectoryGroup(ctx, guests.id, { displayName: 'Guests', externalId: null, memberIds: [] });
  assert.equal(taken.revocationIds.length, 2);
  assert.deepEqual(await profilesOf(portal, 'erin'), ['employees']);
  const receipts = (await portal.admin.revocations()).length;

  // The same check noted again (its change's commit read back late, say) and run by the pass.
  const db = portal.portal.ctx.db;
  await noteProfileChecks(db, [erin], 'change-1', formatAtom(clock.now()));
  clock.advance(PENDING_CHECK_GRACE_MS);
  await portal.reconcile();
  assert.deepEqual(await profilesOf(portal, 'erin'), ['employees']);
  assert.equal((await portal.admin.revocations()).length, receipts, 'no receipt: nothing was there to take');
  assert.deepEqual(await pendingProfileChecks(db, '9999', null, 10), []);

  // A later change noted the user while an older check was running: that check's end keeps the later note.
  await noteProfileChecks(db, [erin], 'change-2', formatAtom(clock.now()));
  await noteProfileChecks(db, [erin], 'change-3', formatAtom(clock.now()));
  await clearProfileCheck(db, asUserId('erin'), 'change-2');
  assert.deepEqual(await pendingProfileChecks(db, '9999', null, 10), [{ userId: 'erin', check: 'change-3' }]);
});

test('a user who leaves the last group granting a profile loses its enrollment tokens of that profile too, so no device enrolls into it afterwards', async (t) => {
  const { portal, ctx } = await stand(t);
  const frank = await provision(ctx, portal, 'frank');
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [frank] });
  await createDirectoryGroup(ctx, { displayName: 'Contractors', externalId: null, memberIds: [frank] });
  const { enrollment_token: guestsToken } = await portal.admin.enrollmentToken({
    user_id: 'frank',
    profile_id: 'guests',
  });
  const { enrollment_token: contractorsToken } = await portal.admin.enrollmentToken({
    user_id: 'frank',
    profile_id: 'contractors',
  });

  await replaceDirectoryGroup(ctx, guests.id, { displayName: 'Guests', externalId: null, memberIds: [] });
  assert.deepEqual(await profilesOf(portal, 'frank'), ['contractors', 'employees']);
  const states = async () =>
    Object.fromEntries((await portal.admin.enrollmentTokens('frank')).map((token) => [token.profile_id, token.state]));
  assert.deepEqual(await states(), { guests: 'revoked', contractors: 'usable' }, 'Contractors still grants its own');

  const enroll = (token: string) =>
    portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
      method: 'POST',
      body: new URLSearchParams({ enrollment_token: token, public_key: generateWireGuardKeyPair().publicKey }),
      headers: { accept: 'application/x-wireguard-profile' },
    });
  assert.equal((await enroll(guestsToken)).status, 410, 'the revoked token enrolls nothing');
  assert.deepEqual(await profilesOf(portal, 'frank'), ['contractors', 'employees'], 'no guests configuration is back');
  assert.equal((await enroll(contractorsToken)).status, 200);
});

test('a managed device registered in a profile its user no longer holds by any group is retired, so its certificate enrolls into it no more', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:SER-1' });
  const phone = ca.device('phone', { cn: 'phone', uri: 'urn:mdm:serial:SER-2' });
  const { portal, ctx } = await stand(t, undefined, {
    enrollment: {
      requestsPerMinute: 10_000,
      clientCertificate: {
        trustAnchors: [path.join(ca.directory, 'issuing.pem')],
        deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
        trustedProxyList: ['127.0.0.1/32'],
      },
    },
  });
  const { user } = await createDirectoryUser(ctx, { userName: 'gina', externalId: null, active: true, attributes: {} });
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [user.id] });
  await createDirectoryGroup(ctx, { displayName: 'Contractors', externalId: null, memberIds: [user.id] });
  await portal.admin.registerDevice({ user_id: 'gina', profile_id: 'guests', platform: 'macos', serial: 'SER-1' });
  await portal.admin.registerDevice({ user_id: 'gina', profile_id: 'contractors', platform: 'ios', serial: 'SER-2' });
  const enroll = (device: typeof laptop) =>
    portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
      method: 'POST',
      body: new URLSearchParams({ public_key: generateWireGuardKeyPair().publicKey }),
      headers: {
        accept: 'application/x-wireguard-profile',
        'x-ssl-client-cert': encodeURIComponent(device.certificatePem),
        'x-ssl-client-verify': 'SUCCESS',
      },
    });
  assert.equal((await enroll(laptop)).status, 200);
  assert.equal((await enroll(phone)).status, 200);
  assert.deepEqual(await profilesOf(portal, 'gina'), ['contractors', 'guests']);

  const taken = await replaceDirectoryGroup(ctx, guests.id, { displayName: 'Guests', externalId: null, memberIds: [] });
  assert.equal(taken.revocationIds.length, 1);
  assert.deepEqual(await profilesOf(portal, 'gina'), ['contractors']);
  const states = Object.fromEntries(
    (await portal.admin.devices()).devices.map((device) => [device.profile_id, device.state]),
  );
  assert.deepEqual(states, { guests: 'retired', contractors: 'active' }, 'Contractors still grants its own');

  const again = await enroll(laptop);
  assert.equal(again.status, 403, again.text);
  assert.deepEqual(await profilesOf(portal, 'gina'), ['contractors'], 'no guests configuration is back');
});

/** A portal whose devices register themselves (`registerAs`) into `profileId`, enrolling through a trusted proxy's headers. */
async function selfRegistering(t: TestContext, profileId: string, clock?: ManualClock) {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const { portal, ctx } = await stand(t, clock, {
    enrollment: {
      requestsPerMinute: 10_000,
      clientCertificate: {
        trustAnchors: [path.join(ca.directory, 'issuing.pem')],
        deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
        trustedProxyList: ['127.0.0.1/32'],
        registerAs: { from: 'san-email', profileId, platform: 'macos' },
      },
    },
  });
  const device = (file: string, serial: string, email: string) =>
    ca.device(file, { cn: file, uri: `urn:mdm:serial:${serial}`, email });
  const enroll = (certificate: ReturnType<typeof device>) =>
    portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
      method: 'POST',
      body: new URLSearchParams({ public_key: generateWireGuardKeyPair().publicKey }),
      headers: {
        accept: 'application/x-wireguard-profile',
        'x-ssl-client-cert': encodeURIComponent(certificate.certificatePem),
        'x-ssl-client-verify': 'SUCCESS',
      },
    });
  return { portal, ctx, device, enroll };
}

test('a device registering itself does not bring its user back into a profile no group of theirs grants any more', async (t) => {
  const { portal, ctx, device, enroll } = await selfRegistering(t, 'guests');
  const owner = 'hana@example.org';
  const { user } = await createDirectoryUser(ctx, { userName: owner, externalId: null, active: true, attributes: {} });
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [user.id] });
  const laptop = await enroll(device('laptop', 'SELF-1', owner));
  assert.equal(laptop.status, 200, `Guests grants the profile: the laptop registers itself (${laptop.text})`);

  await replaceDirectoryGroup(ctx, guests.id, { displayName: 'Guests', externalId: null, memberIds: [] });
  assert.deepEqual(await profilesOf(portal, owner), []);
  const devicesBefore = JSON.stringify(await portal.admin.devices());

  // A new device of hers: a device id no live device has.
  const phone = device('phone', 'SELF-2', owner);
  const refused = await enroll(phone);
  assert.equal(refused.status, 403, refused.text);
  assert.equal(
    (JSON.parse(refused.text) as { error: string }).error,
    `no directory group of user ${owner} grants profile "guests"; a device does not register itself into it`,
  );
  assert.equal(JSON.stringify(await portal.admin.devices()), devicesBefore, 'no device registered');
  assert.deepEqual(await profilesOf(portal, owner), [], 'and no configuration');

  // A user the directory did not provision registers as before.
  assert.equal((await enroll(device('stranger', 'SELF-3', 'ivo@example.org'))).status, 200);
  // Granted again by a group, her new device registers itself.
  await createDirectoryGroup(ctx, { displayName: 'Visitors', externalId: null, memberIds: [user.id] });
  const granted = await enroll(phone);
  assert.equal(granted.status, 200, granted.text);
  assert.deepEqual(await profilesOf(portal, owner), ['guests']);
});

test('a group change the registration raced, whose check ran before the device was there, is caught by a second read after it: the device is retired', async (t) => {
  const { portal, ctx, device, enroll } = await selfRegistering(t, 'guests');
  const owner = 'lina@example.org';
  const { user } = await createDirectoryUser(ctx, { userName: owner, externalId: null, active: true, attributes: {} });
  await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [user.id] });
  // The group change lands with the registration, after its first read of the groups; as its
  // check would have run before the device was there, no check of it takes the device.
  portal.portal.ctx.events.inTransaction(async (event, db) => {
    if (event.type === 'device.registered' && event.device.userId === owner)
      await removeScimUserFromGroups(db, user.id);
  });
  const refused = await enroll(device('laptop', 'SELF-1', owner));
  assert.equal(refused.status, 403, refused.text);
  assert.match(
    (JSON.parse(refused.text) as { error: string }).error,
    /no directory group of user .* grants profile "guests"/,
  );
  assert.deepEqual(
    (await portal.admin.devices({ user_id: owner })).devices.map((registered) => registered.state),
    ['retired'],
  );
  assert.deepEqual(await profilesOf(portal, owner), [], 'no configuration');
});

test('an instance on another mapping than the one applied last does not retire a racing registration the applied mapping grants', async (t) => {
  const { portal, ctx, device, enroll } = await selfRegistering(t, 'guests');
  const owner = 'pia@example.org';
  const { user } = await createDirectoryUser(ctx, { userName: owner, externalId: null, active: true, attributes: {} });
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [user.id] });
  await createDirectoryGroup(ctx, { displayName: 'Contractors', externalId: null, memberIds: [user.id] });
  // A rolling restart: an instance started since grants guests through Contractors too.
  const newer = new Map(
    Object.entries({ ...MAPPING, Contractors: ['contractors', 'guests'] }).map(([group, profiles]) => [
      group,
      profiles.map(asProfileId),
    ]),
  );
  await writeState(ctx.db, APPLIED_MAPPING_KEY, canonicalMapping(newer));
  // She leaves Guests with the registration, after its first read of the groups.
  portal.portal.ctx.events.inTransaction(async (event, db) => {
    if (event.type === 'device.registered' && event.device.userId === owner)
      await db
        .deleteFrom('scim_group_members')
        .where('group_id', '=', guests.id)
        .where('member_id', '=', user.id)
        .execute();
  });
  const answer = await enroll(device('laptop', 'SELF-1', owner));
  assert.equal(answer.status, 200, answer.text);
  assert.deepEqual(
    (await portal.admin.devices({ user_id: owner })).devices.map((registered) => registered.state),
    ['active'],
    'the applied mapping grants guests: not retired',
  );
});

/** Fails every read of group memberships once armed, as a database failing at that moment would. */
class FailingGroupReads implements KyselyPlugin {
  armed = false;

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.armed && args.node.kind === 'SelectQueryNode' && JSON.stringify(args.node).includes('scim_group_members'))
      throw new Error('the database failed the read');
    return args.node;
  }

  transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(args.result);
  }
}

test('a registration whose second read of the groups fails leaves its user noted: the device enrolls only while a group grants the profile, and the next reconcile pass retires it if none does', async (t) => {
  const clock = new ManualClock();
  const { portal, ctx } = await selfRegistering(t, 'guests', clock);
  const failing = new FailingGroupReads();
  const shaky: PortalContext = { ...ctx, db: ctx.db.withPlugin(failing) };
  // The device has not enrolled yet: the certificate as the TLS listener verified it.
  const enrollment = (email: string, serial: string): CertificateEnrollment => ({
    certificate: {
      deviceId: serial,
      subject: `CN=${serial}`,
      issuer: 'CN=MDM issuing CA',
      serialNumber: '0a',
      notAfter: new Date(clock.now().getTime() + 365 * 86_400_000),
      issuerFingerprint: '00'.repeat(32),
      emails: [email],
    },
    publicKey: generateWireGuardKeyPair().publicKey,
    csr: undefined,
    preferTcp: false,
    accept: 'application/x-wireguard-profile',
    profileId: undefined,
    platform: undefined,
  });
  const states = async (userId: string) =>
    (await portal.admin.devices({ user_id: userId })).devices.map((registered) => registered.state);
  const pending = async () =>
    (await ctx.db.selectFrom('scim_users').select('user_id').where('profile_check', 'is not', null).execute()).map(
      (row) => row.user_id,
    );
  // Both registrations fail their second read, right after their commit.
  portal.portal.ctx.events.afterCommit((event) => {
    if (event.type === 'device.registered') failing.armed = true;
  });

  // Mia's groups grant guests: her device waits only for a read that works.
  const mia = await createDirectoryUser(ctx, {
    userName: 'mia@example.org',
    externalId: null,
    active: true,
    attributes: {},
  });
  const guests = await createDirectoryGroup(ctx, { displayName: 'Guests', externalId: null, memberIds: [mia.user.id] });
  await assert.rejects(enrollByCertificate(shaky, enrollment('mia@example.org', 'SELF-1')), /failed the read/);
  failing.armed = false;
  await enrollByCertificate(ctx, enrollment('mia@example.org', 'SELF-1'));
  assert.deepEqual(await profilesOf(portal, 'mia@example.org'), ['guests']);

  // Nora's group change lands with her registration, after its first read of the groups: its
  // check ran before the device was there.
  const nora = await createDirectoryUser(ctx, {
    userName: 'nora@example.org',
    externalId: null,
    active: true,
    attributes: {},
  });
  await createDirectoryGroup(ctx, { displayName: 'Visitors', externalId: null, memberIds: [nora.user.id] });
  portal.portal.ctx.events.inTransaction(async (event, db) => {
    if (event.type === 'device.registered' && event.device.userId === 'nora@example.org')
      await removeScimUserFromGroups(db, nora.user.id);
  });
  await assert.rejects(enrollByCertificate(shaky, enrollment('nora@example.org', 'SELF-2')), /failed the read/);
  failing.armed = false;
  assert.deepEqual(await states('nora@example.org'), ['registered'], 'not retired by the failed read');
  await assert.rejects(
    enrollByCertificate(ctx, enrollment('nora@example.org', 'SELF-2')),
    /no directory group of user nora@example.org grants profile "guests"; device .* does not enroll into it/,
  );
  assert.deepEqual(await profilesOf(portal, 'nora@example.org'), [], 'no configuration');

  // Oli has a check of a group change still to run: his registration leaves it, with its date,
  // for a check of all his profiles (that change's own check may not finish).
  const oli = await createDirectoryUser(ctx, {
    userName: 'oli@example.org',
    externalId: null,
    active: true,
    attributes: {},
  });
  await replaceDirectoryGroup(ctx, guests.id, {
    displayName: 'Guests',
    externalId: null,
    memberIds: [mia.user.id, oli.user.id],
  });
  const notedAt = formatAtom(new Date(clock.now().getTime() - 1000));
  await noteProfileChecks(ctx.db, [oli.user.id], 'a group change of oli', notedAt);
  await enrollByCertificate(ctx, enrollment('oli@example.org', 'SELF-3'));
  const oliNote = await ctx.db
    .selectFrom('scim_users')
    .select(['profile_check', 'profile_check_at'])
    .where('user_id', '=', 'oli@example.org')
    .executeTakeFirstOrThrow();
  assert.notEqual(oliNote.profile_check, null, 'still noted');
  assert.notEqual(oliNote.profile_check, 'a group change of oli', "that change's end does not clear it");
  assert.equal(oliNote.profile_check_at, notedAt);

  clock.advance(PENDING_CHECK_GRACE_MS);
  await portal.reconcile();
  assert.deepEqual(await states('nora@example.org'), ['retired'], "the pass's check retires it");
  assert.deepEqual(await states('mia@example.org'), ['active'], 'granted: kept');
  assert.deepEqual(await states('oli@example.org'), ['active'], 'granted: kept');
  assert.deepEqual(await pending(), []);
});

test('a device registering itself into a profile no group names is not held to the groups', async (t) => {
  const { portal, ctx, device, enroll } = await selfRegistering(t, 'employees');
  await createDirectoryUser(ctx, { userName: 'jan@example.org', externalId: null, active: true, attributes: {} });
  const answer = await enroll(device('laptop', 'SELF-1', 'jan@example.org'));
  assert.equal(answer.status, 200, answer.text);
  assert.deepEqual(await profilesOf(portal, 'jan@example.org'), ['employees']);
});
