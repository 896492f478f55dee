// An edited `scim.groupProfiles` on a real database, across a restart of the portal: a grant
// taken away from a group is applied by the first reconcile pass to every member no other group
// grants it (a receipt each), not only at their next group change; a mapping that only adds
// takes nothing and notes nobody; a database that never remembered a mapping (an upgrade), or
// remembered `{}`, remembers the configured one and takes nothing at start; and an instance
// still on an older mapping takes only what both mappings withhold and leaves the checks to the
// instances of the mapping applied last.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { AdminCall } from '../../../src/core/admin-call.js';
import type { PortalContext } from '../../../src/core/context.js';
import {
  applyEditedGroupProfiles,
  createDirectoryGroup,
  createDirectoryUser,
  GROUP_PROFILES_CALL,
  replaceDirectoryGroup,
} from '../../../src/core/directory/index.js';
import {
  APPLIED_MAPPING_KEY,
  canonicalMapping,
  mayTakeMore,
  NOTING_KEY,
} from '../../../src/core/directory/mapping-change.js';
import { readState, writeState } from '../../../src/storage/portal-state.js';
import { noteProfileChecks } from '../../../src/storage/scim-users.js';
import { formatAtom } from '../../../src/shared/time.js';
import { mountTmpfs, type Tmpfs } from '../../support/tmpfs.js';
import { asProfileId, type ProfileId } from '../../../src/shared/ids.js';
import { auditLog } from '../../support/admin-keys.js';
import { UNREACHABLE_NODE, startTestPortal, type TestPortal } from '../../support/test-portal.js';

type Mapping = Record<string, string[]>;

const BEFORE: Mapping = { 'VPN Staff': ['guests', 'contractors'], 'VPN Admins': ['contractors'] };
const AFTER: Mapping = { 'VPN Staff': ['guests'], 'VPN Admins': ['contractors'] };

type Start = (
  mapping: Mapping,
  database?: string,
) => Promise<{ readonly portal: TestPortal; readonly ctx: PortalContext }>;

/**
 * Starts portals on a data directory of the test's own, so that each shares the database of the
 * one before (or on `database`); at the end closes them all, then removes the directory. On
 * `disk`, the directory is there and the database SQLite's, whatever the pass.
 */
function portals(t: TestContext, disk?: Tmpfs): Start {
  const dataDir =
    disk === undefined ? mkdtempSync(path.join(tmpdir(), 'vpn-portal-mapping-')) : path.join(disk.dir, 'data');
  const started: TestPortal[] = [];
  t.after(async () => {
    for (const portal of started) await portal.close();
    if (disk === undefined) rmSync(dataDir, { recursive: true, force: true });
    else disk.unmount();
  });
  const profile = (profileId: string, range: number) => ({
    profileId,
    displayName: profileId,
    hostName: 'vpn.example.org',
    wRangeFour: `10.${range}.0.0/24`,
    wRangeSix: `fd${range}::/64`,
    nodeUrl: UNREACHABLE_NODE,
  });
  return async (mapping, database) => {
    const portal = await startTestPortal({
      ...(database === undefined ? { dataDir } : { dataDir: mkdtempSync(path.join(dataDir, 'other-')), database }),
      ...(disk === undefined ? {} : { database: 'sqlite' }),
      config: {
        ProfileList: [profile('employees', 54), profile('guests', 55), profile('contractors', 56)],
        scim: { groupProfiles: mapping },
      },
    });
    started.push(portal);
    const base = portal.portal.ctx;
    const call: AdminCall = {
      caller: { kind: 'command-line', sourceAddress: 'local' },
      name: 'scim test',
      parameters: {},
      successStatus: 200,
    };
    return { portal, ctx: { ...base, call, events: base.events.forCall(call) } };
  };
}

const map = (mapping: Mapping): Map<string, ProfileId[]> =>
  new Map(Object.entries(mapping).map(([group, profiles]) => [group, profiles.map(asProfileId)]));

async function profilesOf(portal: TestPortal, userId: string): Promise<string[]> {
  return (await portal.admin.userConfigurationList(userId)).map((configuration) => configuration.profile_id).sort();
}

/** A directory user with a configuration of each profile. */
async function provision(ctx: PortalContext, portal: TestPortal, userName: string): Promise<string> {
  const { user } = await createDirectoryUser(ctx, { userName, externalId: null, active: true, attributes: {} });
  for (const profileId of ['employees', 'guests', 'contractors'])
    await portal.admin.create({ user_id: userName, profile_id: profileId });
  return user.id;
}

async function noted(portal: TestPortal): Promise<string[]> {
  const rows = await portal.portal.ctx.db
    .selectFrom('scim_users')
    .select('user_id')
    .where('profile_check', 'is not', null)
    .orderBy('user_id')
    .execute();
  return rows.map((row) => row.user_id);
}

/** Alice is in VPN Staff alone, bob in VPN Staff and VPN Admins; both hold all three profiles. Answers alice's SCIM id. */
async function staffAndAdmins(ctx: PortalContext, portal: TestPortal): Promise<{ readonly alice: string }> {
  const alice = await provision(ctx, portal, 'alice');
  const bob = await provision(ctx, portal, 'bob');
  await createDirectoryGroup(ctx, { displayName: 'VPN Staff', externalId: null, memberIds: [alice, bob] });
  await createDirectoryGroup(ctx, { displayName: 'VPN Admins', externalId: null, memberIds: [bob] });
  assert.deepEqual(await profilesOf(portal, 'alice'), ['contractors', 'employees', 'guests']);
  assert.deepEqual(await noted(portal), [], 'the group changes checked their members');
  return { alice };
}

test('a grant taken from a group by an edited mapping is taken, with a receipt, from each member no other group grants it by the first reconcile pass after the restart', async (t) => {
  const start = portals(t);
  const first = await start(BEFORE);
  await staffAndAdmins(first.ctx, first.portal);
  const receiptsBefore = new Set((await first.portal.admin.revocations()).map((receipt) => receipt.revocation_id));
  await first.portal.close();

  // Restarted on the edited mapping, no group changes since: the pass run at start takes it.
  const { portal } = await start(AFTER);
  await portal.reconcile();

  assert.deepEqual(await profilesOf(portal, 'alice'), ['employees', 'guests'], 'no group grants her contractors now');
  assert.deepEqual(
    await profilesOf(portal, 'bob'),
    ['contractors', 'employees', 'guests'],
    'VPN Admins still grants it',
  );
  const receipts = (await portal.admin.revocations()).filter((receipt) => !receiptsBefore.has(receipt.revocation_id));
  assert.deepEqual(
    receipts.map((receipt) => [receipt.user_id, receipt.reason]),
    [['alice', 'delete_connection']],
  );
  const byPass = (await auditLog(portal))
    .filter((record) => record.call === GROUP_PROFILES_CALL)
    .map((record) => [record.keyName, record.userId, record.connectionIds.length]);
  assert.deepEqual(byPass, [['(portal)', 'alice', 1]]);
  assert.deepEqual(await noted(portal), [], 'done once');

  // Started again on the same mapping: nothing to apply, nobody noted.
  await portal.close();
  const again = await start(AFTER);
  assert.deepEqual(await noted(again.portal), []);
});

test('SQLite only: a start on a database it cannot write, its mapping edited, starts all the same and reads; the next start that can write applies the mapping', async (t) => {
  const disk = mountTmpfs(16 * 1024 * 1024);
  const start = portals(t, disk);
  const first = await start(BEFORE);
  await staffAndAdmins(first.ctx, first.portal);
  await first.portal.close();

  // Immutable: SQLite opens it read-only, as a file of another user would be.
  const databaseFile = path.join(disk.dir, 'data', 'db.sqlite');
  execFileSync('chattr', ['+i', databaseFile]);
  // Unlocked again below; should the test fail first, the disk's unmount takes the file with it.
  const readOnly = await start(AFTER);
  assert.deepEqual(await profilesOf(readOnly.portal, 'alice'), ['contractors', 'employees', 'guests']);
  await readOnly.portal.reconcile();
  assert.equal(await readState(readOnly.portal.portal.ctx.db, APPLIED_MAPPING_KEY), canonicalMapping(map(BEFORE)));
  await readOnly.portal.close();

  execFileSync('chattr', ['-i', databaseFile]);
  const { portal } = await start(AFTER);
  await portal.reconcile();
  assert.deepEqual(await profilesOf(portal, 'alice'), ['employees', 'guests']);
  assert.deepEqual(await profilesOf(portal, 'bob'), ['contractors', 'employees', 'guests']);
});

test('a mapping that only adds grants, or unmaps a profile, notes nobody; one that maps a profile anew notes everyone', async (t) => {
  const { portal, ctx } = await portals(t)(AFTER);
  await staffAndAdmins(ctx, portal);
  const base = portal.portal.ctx;
  const appliedAtStart = (mapping: Mapping): Promise<number> =>
    applyEditedGroupProfiles({
      ...base,
      config: { ...base.config, scim: { ...base.config.scim, groupProfiles: map(mapping) } },
    });

  assert.equal(await appliedAtStart(AFTER), 0, 'the mapping applied');
  assert.equal(await appliedAtStart(BEFORE), 0, 'more grants take nothing more');
  assert.equal(await appliedAtStart({ 'VPN Staff': ['guests'] }), 0, 'contractors is left to the portal: untouched');
  assert.deepEqual(await noted(portal), []);
  assert.equal(
    await appliedAtStart({ 'VPN Staff': ['guests'], 'VPN Admins': ['employees'] }),
    2,
    'employees is granted by groups from now on',
  );
  assert.deepEqual(await noted(portal), ['alice', 'bob']);

  // A start stopped while noting: the next one, on the same mapping, notes everyone again.
  await writeState(base.db, NOTING_KEY, 'the noting start was stopped');
  assert.equal(await appliedAtStart({ 'VPN Staff': ['guests'], 'VPN Admins': ['employees'] }), 2);
  assert.equal(await appliedAtStart({ 'VPN Staff': ['guests'], 'VPN Admins': ['employees'] }), 0, 'finished');
});

test('a database that never remembered a mapping, as after an upgrade, remembers the configured one and takes nothing at start; the next edit that may take more is applied to everyone', async (t) => {
  const start = portals(t);
  const first = await start(AFTER);
  const alice = await provision(first.ctx, first.portal, 'alice');
  await createDirectoryGroup(first.ctx, { displayName: 'VPN Staff', externalId: null, memberIds: [alice] });
  // Adding a member takes nothing: alice keeps contractors, which no group of hers grants, until
  // a change takes it.
  // As a version that did not remember it left the database.
  await first.portal.portal.ctx.db.deleteFrom('portal_state').where('key', '=', APPLIED_MAPPING_KEY).execute();
  await first.portal.close();

  const upgraded = await start(AFTER);
  await upgraded.portal.reconcile();
  assert.deepEqual(await noted(upgraded.portal), [], 'nobody noted by the upgrade');
  assert.deepEqual(await profilesOf(upgraded.portal, 'alice'), ['contractors', 'employees', 'guests']);
  assert.equal(await readState(upgraded.portal.portal.ctx.db, APPLIED_MAPPING_KEY), canonicalMapping(map(AFTER)));
  await upgraded.portal.close();

  // Employees mapped to VPN Staff: a mapping that may take more, applied to everyone.
  const { portal } = await start({ 'VPN Staff': ['employees'], 'VPN Admins': ['contractors'] });
  await portal.reconcile();
  assert.deepEqual(await profilesOf(portal, 'alice'), ['employees', 'guests'], 'no group of hers grants contractors');
  assert.deepEqual(await noted(portal), []);
});

test('an instance still on the mapping applied before takes nothing its own mapping grants and leaves the notes to an instance of the mapping applied last', async (t) => {
  const start = portals(t);
  const older = await start(BEFORE);
  const { alice } = await staffAndAdmins(older.ctx, older.portal);
  // A rolling restart: a newer instance starts on the edited mapping and applies it.
  const newer = await start(AFTER, older.portal.database);
  await newer.portal.reconcile();
  assert.deepEqual(await profilesOf(newer.portal, 'alice'), ['employees', 'guests']);
  // An administrator's create is not checked against the groups (until a group change).
  await older.portal.admin.create({ user_id: 'alice', profile_id: 'contractors' });

  // A group change the older instance handles checks alice by its mapping, which grants her contractors.
  const readers = await createDirectoryGroup(older.ctx, {
    displayName: 'Readers',
    externalId: null,
    memberIds: [alice],
  });
  await replaceDirectoryGroup(older.ctx, readers.id, { displayName: 'Readers', externalId: null, memberIds: [] });
  await older.portal.reconcile();
  assert.deepEqual(await profilesOf(older.portal, 'alice'), ['contractors', 'employees', 'guests']);
  assert.deepEqual(await noted(older.portal), ['alice'], 'left for the newer mapping');
  await newer.portal.reconcile();
  assert.deepEqual(await profilesOf(newer.portal, 'alice'), ['employees', 'guests']);
  assert.deepEqual(await noted(newer.portal), []);
});

test('during a rollout that adds a grant, an instance still on the older mapping takes from the members of its group changes only what both mappings withhold', async (t) => {
  const start = portals(t);
  // The older mapping grants VPN Staff guests alone; the newer, guests and contractors.
  const older = await start(AFTER);
  const alice = await provision(older.ctx, older.portal, 'alice');
  const bob = await provision(older.ctx, older.portal, 'bob');
  const staff = await createDirectoryGroup(older.ctx, {
    displayName: 'VPN Staff',
    externalId: null,
    memberIds: [alice, bob],
  });
  // Adding members takes nothing: both keep contractors, which the older mapping withholds.
  assert.deepEqual(await profilesOf(older.portal, 'alice'), ['contractors', 'employees', 'guests']);
  const newer = await start(BEFORE, older.portal.database);
  await newer.portal.reconcile();

  // Through the older instance: bob leaves VPN Staff, alice leaves another group.
  await replaceDirectoryGroup(older.ctx, staff.id, { displayName: 'VPN Staff', externalId: null, memberIds: [alice] });
  const readers = await createDirectoryGroup(older.ctx, {
    displayName: 'Readers',
    externalId: null,
    memberIds: [alice],
  });
  await replaceDirectoryGroup(older.ctx, readers.id, { displayName: 'Readers', externalId: null, memberIds: [] });
  assert.deepEqual(
    await profilesOf(older.portal, 'alice'),
    ['contractors', 'employees', 'guests'],
    'the applied mapping grants her contractors through VPN Staff',
  );
  assert.deepEqual(await profilesOf(older.portal, 'bob'), ['employees'], 'both withhold his guests and contractors');
  assert.deepEqual(await noted(older.portal), ['alice', 'bob'], 'left for the newer mapping');
  await newer.portal.reconcile();
  assert.deepEqual(await profilesOf(newer.portal, 'alice'), ['contractors', 'employees', 'guests']);
  assert.deepEqual(await noted(newer.portal), []);
});

test('the reconcile pass of an instance still on an older mapping leaves the pending checks alone: its mapping could take what the applied one grants', async (t) => {
  const start = portals(t);
  const older = await start(AFTER);
  const alice = await provision(older.ctx, older.portal, 'alice');
  await createDirectoryGroup(older.ctx, { displayName: 'VPN Staff', externalId: null, memberIds: [alice] });
  // A rolling restart: the newer instance grants VPN Staff contractors too.
  const newer = await start(BEFORE, older.portal.database);
  await newer.portal.reconcile();
  // A check of alice is due (a group change's, left by a failure, say).
  await noteProfileChecks(
    older.portal.portal.ctx.db,
    [alice],
    'a check left over',
    formatAtom(new Date(Date.now() - 3_600_000)),
  );

  await older.portal.reconcile();
  assert.deepEqual(
    await profilesOf(older.portal, 'alice'),
    ['contractors', 'employees', 'guests'],
    'nothing taken by the older mapping',
  );
  assert.deepEqual(await noted(older.portal), ['alice'], 'left for the newer instance');
  await newer.portal.reconcile();
  assert.deepEqual(
    await profilesOf(newer.portal, 'alice'),
    ['contractors', 'employees', 'guests'],
    'the applied mapping grants it',
  );
  assert.deepEqual(await noted(newer.portal), []);
});

test('the delayed apply of a start whose database refused the writes does not write over a mapping another instance remembered since', async (t) => {
  const { portal, ctx } = await portals(t)(AFTER);
  await staffAndAdmins(ctx, portal);
  const base = portal.portal.ctx;
  const on = (mapping: Mapping): PortalContext => ({
    ...base,
    config: { ...base.config, scim: { ...base.config.scim, groupProfiles: map(mapping) } },
  });
  const applied = () => readState(base.db, APPLIED_MAPPING_KEY);
  // Adds guests to VPN Admins: taking nothing more, remembered at once.
  const THIRD: Mapping = { 'VPN Staff': ['guests'], 'VPN Admins': ['contractors', 'guests'] };
  // Maps employees anew: everyone would be noted.
  const TAKER: Mapping = { 'VPN Staff': ['guests'], 'VPN Admins': ['employees'] };

  // Two instances started while AFTER was remembered and their database refused the writes:
  // what their starts read.
  const atStart = { applied: await applied() };
  assert.equal(atStart.applied, canonicalMapping(map(AFTER)));
  // Since, a third instance started on a mapping of its own, and could write.
  assert.equal(await applyEditedGroupProfiles(on(THIRD)), 0);
  assert.equal(await applied(), canonicalMapping(map(THIRD)));

  // Their delayed applies, at their first profile checks: the later start's mapping stays.
  assert.equal(await applyEditedGroupProfiles(on(BEFORE), atStart), 0);
  assert.equal(await applyEditedGroupProfiles(on(TAKER), atStart), 0);
  assert.equal(await applied(), canonicalMapping(map(THIRD)), 'not overwritten');
  assert.deepEqual(await noted(portal), [], 'nobody noted for a mapping not applied');
  assert.equal(await readState(base.db, NOTING_KEY), null);

  // A delayed apply over the mapping its start read is made as a start's.
  assert.equal(await applyEditedGroupProfiles(on(TAKER), { applied: await applied() }), 2);
  assert.equal(await applied(), canonicalMapping(map(TAKER)));
  assert.deepEqual(await noted(portal), ['alice', 'bob']);
});

test('a mapping set again after `{}` is remembered and takes nothing at start, as a first one', async (t) => {
  const start = portals(t);
  const first = await start(AFTER);
  const alice = await provision(first.ctx, first.portal, 'alice');
  await createDirectoryGroup(first.ctx, { displayName: 'VPN Staff', externalId: null, memberIds: [alice] });
  await first.portal.close();
  await (await start({})).portal.close();

  const { portal } = await start(AFTER);
  await portal.reconcile();
  assert.deepEqual(await noted(portal), []);
  assert.deepEqual(await profilesOf(portal, 'alice'), ['contractors', 'employees', 'guests']);
  assert.equal(await readState(portal.portal.ctx.db, APPLIED_MAPPING_KEY), canonicalMapping(map(AFTER)));
});

test('only a mapping that maps a profile anew or takes a grant from a group may take more', () => {
  assert.equal(mayTakeMore(map(BEFORE), map(AFTER)), true);
  assert.equal(mayTakeMore(map(AFTER), map(BEFORE)), false);
  assert.equal(mayTakeMore(map({}), map(AFTER)), true);
  assert.equal(mayTakeMore(map(AFTER), map({})), false);
  assert.equal(mayTakeMore(map(AFTER), map({ 'VPN Staff': ['guests'] })), false, 'contractors unmapped');
  assert.equal(mayTakeMore(map(AFTER), map({ Staff: ['guests'], 'VPN Admins': ['contractors'] })), true, 'renamed');
  assert.equal(
    mayTakeMore(map(AFTER), map({ 'VPN Staff': ['guests'], 'VPN Admins': ['contractors'], New: ['guests'] })),
    false,
  );
});

test('a group change an instance without a mapping handles is still checked by an instance of the mapping applied last', async (t) => {
  const start = portals(t);
  // A rolling restart that brings the first mapping: the older instance has none.
  const older = await start({});
  const alice = await provision(older.ctx, older.portal, 'alice');
  const staff = await createDirectoryGroup(older.ctx, {
    displayName: 'VPN Staff',
    externalId: null,
    memberIds: [alice],
  });
  const newer = await start(BEFORE, older.portal.database);

  // Alice leaves VPN Staff, the group that granted her guests and contractors, through the older instance.
  await replaceDirectoryGroup(older.ctx, staff.id, { displayName: 'VPN Staff', externalId: null, memberIds: [] });
  await older.portal.reconcile();
  await newer.portal.reconcile();
  assert.deepEqual(
    await profilesOf(newer.portal, 'alice'),
    ['employees'],
    'her group change is checked by the mapping applied, as one the newer instance handled would be',
  );
});
