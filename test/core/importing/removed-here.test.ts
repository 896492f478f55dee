// The eduVPN import run after something was revoked here (both databases in the suite): the
// eduVPN server still holds it, and bringing it again would put a revoked configuration back on
// its node. A WireGuard or OpenVPN configuration deleted here, a user destroyed here (with its
// configurations and authorizations, also those eduVPN issued later; for good, also once the
// receipt of the destroy was pruned, and also a user made here rather than brought; one made
// again since gets only what eduVPN issued after the destroy), an authorization deleted here, a
// user disabled here (it stays disabled, and gets no authorization, and no configuration not
// here, also once enabled again, unless only the import disabled it), history past the retention
// here (unless a legal hold keeps it) and a configuration whose revocation receipt was pruned
// since are left, counted and named in the plan; the rest is imported, and a run again still
// changes nothing. How long the import's notes are kept: test/storage/imported-records.test.ts.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import {
  importEduVpn,
  planEduVpnImport,
  type ImportContext,
  type ImportPlan,
} from '../../../src/core/importing/index.js';
import type {
  EduVpnAuthorization,
  EduVpnConnectionLogEntry,
  EduVpnRecordKind,
} from '../../../src/eduvpn/deployment.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { formatAtom } from '../../../src/shared/time.js';
import { destroyedUserDigest } from '../../../src/storage/destroyed-user-digest.js';
import { authorizationsWithKeys } from '../../../src/storage/authorizations.js';
import { certificatesWithNames } from '../../../src/storage/certificates.js';
import { usersWithIds } from '../../../src/storage/users.js';
import { peersWantedOnNode, peersWithKeys } from '../../../src/storage/wg-peers.js';
import { auditLog, makeAdminKey } from '../../support/admin-keys.js';
import {
  eduVpnCertificate,
  eduVpnPeer,
  eduVpnUser,
  emptyRecords,
  inMemoryDeployment,
  type EduVpnRecords,
} from '../../support/in-memory-eduvpn.js';
import { startImportPortal } from '../../support/import-portal.js';
import { scimClient } from '../../support/scim-client.js';
import { UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';

let portal: TestPortal;
let ctx: ImportContext;

// A portal of its own for each story: a run's deployment is all eduVPN has then, and what an
// earlier story brought and this one's eduVPN does not have would be revoked there.
beforeEach(async () => {
  portal = await startImportPortal([
    {
      profileId: 'contractors',
      displayName: 'Contractors',
      hostName: 'vpn.example.org',
      wRangeFour: '10.48.0.0/24',
      wRangeSix: 'fd48::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
  ]);
  ctx = portal.portal.ctx;
});
afterEach(() => portal.close());

/** The WireGuard public keys node 0 should hold now: what the next reconcile pass puts there. */
async function wantedOnNode(): Promise<string[]> {
  const wanted = await peersWantedOnNode(ctx.db, { now: formatAtom(new Date()), nodeNumber: asNodeNumber(0) });
  return wanted.map((peer) => peer.publicKey);
}

/** Imports `records` and asserts it brought something and met no conflict. */
async function firstImport(records: EduVpnRecords): Promise<void> {
  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.ok(Object.values(outcome.applied?.inserted ?? {}).some((count) => count > 0));
}

/** Imports `records` again: the run succeeds, brings nothing, and answers its plan. */
async function importAgainBringingNothing(records: EduVpnRecords): Promise<ImportPlan> {
  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, [], 'nothing removed here is a conflict');
  assert.deepEqual(Object.values(outcome.applied?.inserted ?? {}), [0, 0, 0, 0, 0, 0], 'nothing is brought back');
  return outcome.plan;
}

/** An app's authorization of `userId`, valid for years. */
function appAuthorization(authKey: string, userId: string): EduVpnAuthorization {
  return {
    authKey,
    userId: asUserId(userId),
    userFound: true,
    clientId: 'org.eduvpn.app.linux',
    scope: 'config',
    authorizedAt: '2026-10-01T08:00:00+00:00',
    expiresAt: '2099-01-01T00:00:00+00:00',
  };
}

/** The keys of the authorizations here, of those asked about, sorted. */
async function authorizationsHere(authKeys: readonly string[]): Promise<string[]> {
  return (await authorizationsWithKeys(ctx.db, authKeys)).map((authorization) => authorization.authKey).sort();
}

/**
 * What the housekeeping does to a finished receipt after auditLogRetention (a year by default),
 * and the day's housekeeping run again with whatever else it prunes then.
 */
async function receiptPrunedAndHousekeepingRun(receipt: string | null): Promise<void> {
  assert.ok(receipt !== null, 'a receipt');
  await ctx.db.deleteFrom('revocation_nodes').where('revocation_id', '=', receipt).execute();
  await ctx.db.deleteFrom('revocations').where('revocation_id', '=', receipt).execute();
  await ctx.db.deleteFrom('portal_state').where('key', '=', 'housekeeping.day').execute();
  await portal.reconcile();
}

/** Per kind, how many the plan leaves because they were removed here (kinds with none left out). */
function removedHereCounts(plan: ImportPlan): Partial<Record<EduVpnRecordKind, number>> {
  return Object.fromEntries(
    Object.entries(plan.counts)
      .filter(([, counts]) => counts.removedHere > 0)
      .map(([kind, counts]) => [kind, counts.removedHere]),
  );
}

test('a WireGuard configuration deleted here after an import is not brought back by importing again, and the report says so', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('alice')];
  records.wireGuardPeers = [eduVpnPeer('alice', 0), eduVpnPeer('alice', 1)];
  const [deleted, kept] = records.wireGuardPeers.map((peer) => peer.publicKey);
  assert.ok(deleted !== undefined && kept !== undefined);
  await firstImport(records);
  assert.notEqual(await portal.admin.deleteConnection('alice', deleted), null, 'a receipt');

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.deepEqual(await peersWithKeys(ctx.db, [deleted]), [], 'the deleted configuration is not back');
  assert.ok(!(await wantedOnNode()).includes(deleted), 'no reconcile pass puts it on the node');
  assert.ok((await wantedOnNode()).includes(kept));

  assert.deepEqual(removedHereCounts(plan), { wireGuardPeers: 1 });
  assert.equal(plan.counts.wireGuardPeers.alreadyHere, 1);
  assert.equal(plan.removedHereCount, 1);
  assert.equal(plan.removedHere[0]?.record, deleted);
  assert.match(plan.removedHere[0]?.reason ?? '', /^brought by an import at .+ and revoked here since/);

  const again = await importAgainBringingNothing(records);
  assert.deepEqual(removedHereCounts(again), { wireGuardPeers: 1 }, 'a run again still changes nothing');
});

test('a WireGuard configuration deleted here whose address went to a new configuration since is left, not a conflict that stops the import', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('frank')];
  records.wireGuardPeers = [
    eduVpnPeer('frank', 0, { profileId: asProfileId('contractors'), ipFour: '10.48.0.2', ipSix: 'fd48::2' }),
  ];
  const deleted = records.wireGuardPeers[0]?.publicKey ?? '';
  await firstImport(records);
  assert.notEqual(await portal.admin.deleteConnection('frank', deleted), null, 'a receipt');
  // The address it gave back goes to the next create: eduVPN's row now names another's address.
  const created = await portal.admin.create(
    { user_id: 'dave', profile_id: 'contractors' },
    'application/x-wireguard-profile',
  );
  assert.match(created.body, /Address = 10\.48\.0\.2\//);

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.deepEqual(await peersWithKeys(ctx.db, [deleted]), []);
  assert.deepEqual(removedHereCounts(plan), { wireGuardPeers: 1 });
});

test('a user destroyed here after an import is not brought back by importing again, nor its configurations and authorizations, not even those eduVPN issued later', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('bob')];
  records.wireGuardPeers = [eduVpnPeer('bob', 2, { authKey: 'bob-app' })];
  records.certificates = [eduVpnCertificate('bob')];
  records.authorizations = [
    {
      authKey: 'bob-app',
      userId: asUserId('bob'),
      userFound: true,
      clientId: 'org.eduvpn.app.linux',
      scope: 'config',
      authorizedAt: '2026-10-01T08:00:00+00:00',
      expiresAt: '2099-01-01T00:00:00+00:00',
    },
  ];
  await firstImport(records);
  const importRows = (await auditLog(portal)).filter((row) => row.call === 'import eduvpn').length;
  assert.notEqual(await portal.admin.destroy('bob'), null, 'a receipt');
  // eduVPN still runs meanwhile (the move is tried again later) and issues bob another one.
  records.wireGuardPeers.push(eduVpnPeer('bob', 3));
  const keys: string[] = records.wireGuardPeers.map((peer) => peer.publicKey);

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.equal((await usersWithIds(ctx.db, [asUserId('bob')])).size, 0, 'bob is not back');
  assert.deepEqual(await peersWithKeys(ctx.db, keys), []);
  assert.ok(!(await wantedOnNode()).some((key) => keys.includes(key)));
  assert.deepEqual(await certificatesWithNames(ctx.db, [records.certificates[0]?.commonName ?? '']), []);
  assert.deepEqual(await authorizationsWithKeys(ctx.db, ['bob-app']), []);
  assert.ok(!(await portal.admin.users()).includes('bob'));

  assert.deepEqual(removedHereCounts(plan), { users: 1, authorizations: 1, wireGuardPeers: 2, certificates: 1 });
  const reasons = new Map(plan.removedHere.map((removed) => [removed.record, removed.reason]));
  assert.match(reasons.get('bob') ?? '', /^brought by an import at .+ and destroyed here since$/);
  assert.match(
    reasons.get(keys[1] ?? '') ?? '',
    /^its user bob was brought by an import at .+ and destroyed here since$/,
  );
  assert.match(reasons.get('bob-app') ?? '', /^its user bob was brought/);
  assert.equal(
    (await auditLog(portal)).filter((row) => row.call === 'import eduvpn').length,
    importRows,
    'a run that brought nothing writes no audit row',
  );
});

test('an OpenVPN configuration deleted here after an import is not brought back by importing again', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('carol')];
  records.certificates = [eduVpnCertificate('carol'), eduVpnCertificate('carol')];
  const [deleted, kept] = records.certificates.map((certificate) => certificate.commonName);
  assert.ok(deleted !== undefined && kept !== undefined);
  await firstImport(records);
  assert.notEqual(await portal.admin.deleteConnection('carol', deleted), null, 'a receipt');

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  // The certificate row is what a node's connect is checked against: without it the client is refused.
  assert.deepEqual(
    (await certificatesWithNames(ctx.db, [deleted, kept])).map((certificate) => certificate.commonName),
    [kept],
  );
  assert.deepEqual(removedHereCounts(plan), { certificates: 1 });
  assert.equal(plan.removedHere[0]?.record, deleted);
});

test('a configuration revoked here stays out of a later import after its receipt was pruned and the daily housekeeping ran', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('erin')];
  records.wireGuardPeers = [eduVpnPeer('erin', 4)];
  const key = records.wireGuardPeers[0]?.publicKey ?? '';
  await firstImport(records);
  await receiptPrunedAndHousekeepingRun(await portal.admin.deleteConnection('erin', key));

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.deepEqual(await peersWithKeys(ctx.db, [key]), []);
  assert.ok(!(await wantedOnNode()).includes(key));
  assert.deepEqual(removedHereCounts(plan), { wireGuardPeers: 1 });
});

test('an authorization deleted here after an import is not brought back by importing again, and the report says so', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('gina')];
  records.wireGuardPeers = [eduVpnPeer('gina', 6, { authKey: 'gina-app' })];
  records.authorizations = [appAuthorization('gina-app', 'gina'), appAuthorization('gina-phone', 'gina')];
  await firstImport(records);
  assert.deepEqual(await authorizationsHere(['gina-app', 'gina-phone']), ['gina-app', 'gina-phone']);
  await portal.admin.deleteUserAuthorizations('gina');

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.deepEqual(await authorizationsHere(['gina-app', 'gina-phone']), [], 'neither is back');
  assert.deepEqual(removedHereCounts(plan), { authorizations: 2 });
  assert.equal(
    plan.counts.wireGuardPeers.alreadyHere,
    1,
    'its configuration stays, as delete_user_authorizations leaves it',
  );
  for (const removed of plan.removedHere)
    assert.match(removed.reason, /^brought by an import at .+ and deleted here since/);

  const again = await importAgainBringingNothing(records);
  assert.deepEqual(removedHereCounts(again), { authorizations: 2 }, 'a run again still changes nothing');
});

test('a user disabled here after an import stays disabled when importing again, without a conflict, and gets no authorization back or new', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('hank')];
  records.authorizations = [appAuthorization('hank-app', 'hank')];
  await firstImport(records);
  assert.notEqual(await portal.admin.disableUser('hank'), null, 'a receipt');
  assert.deepEqual(await authorizationsHere(['hank-app']), [], 'disabling ended its authorization');
  // eduVPN, where hank is still enabled, authorizes another of hank's apps meanwhile.
  records.authorizations.push(appAuthorization('hank-laptop', 'hank'));

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.ok((await portal.admin.disabledUsers()).includes('hank'), 'hank stays disabled');
  assert.deepEqual(await authorizationsHere(['hank-app', 'hank-laptop']), []);

  assert.deepEqual(removedHereCounts(plan), { users: 1, authorizations: 2 });
  const reasons = new Map(plan.removedHere.map((removed) => [removed.record, removed.reason]));
  assert.match(
    reasons.get('hank') ?? '',
    /^brought by an import at .+ and disabled here \(eduVPN has it enabled\): it stays disabled$/,
  );
  assert.match(reasons.get('hank-app') ?? '', /^brought by an import at .+ and deleted here since/);
  assert.equal(reasons.get('hank-laptop'), 'its user hank is disabled here, which ended its authorizations');

  const again = await importAgainBringingNothing(records);
  assert.deepEqual(removedHereCounts(again), { users: 1, authorizations: 2 }, 'a run again still changes nothing');
});

/** A WireGuard session of `userId` that ended `daysAgo` days ago, after an hour. */
function sessionEnded(userId: string, daysAgo: number): EduVpnConnectionLogEntry {
  const end = Date.now() - daysAgo * 86_400_000;
  return {
    userId: asUserId(userId),
    writtenUserId: asUserId(userId),
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard',
    connectionId: `${userId}-${daysAgo}`,
    ipFour: '10.44.0.99',
    ipSix: 'fd44::99',
    connectedAt: formatAtom(new Date(end - 3600_000)),
    disconnectedAt: formatAtom(new Date(end)),
    bytesIn: 1,
    bytesOut: 2,
  };
}

test('history that ended before the retention here is not brought, as the housekeeping deleted it or would, unless a legal hold keeps its user’s history', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('ivy'), eduVpnUser('jack')];
  await firstImport(records);
  const hold = await portal.admin.createLegalHold({
    user_id: 'jack',
    reason: 'case 2026-17',
    until: formatAtom(new Date(Date.now() + 30 * 86_400_000)),
  });
  // connectionLogRetention is P1M.
  records.connectionLog = [sessionEnded('ivy', 60), sessionEnded('ivy', 1), sessionEnded('jack', 60)];

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  assert.deepEqual([plan.counts.connectionLog.toBring, plan.counts.connectionLog.expired], [2, 1]);
  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.equal(outcome.applied?.inserted.connectionLog, 2);
  const log = await ctx.db
    .selectFrom('connection_log')
    .select('connection_id')
    .where('user_id', 'in', ['ivy', 'jack'])
    .orderBy('connection_id')
    .execute();
  assert.deepEqual(
    log.map((row) => row.connection_id),
    ['ivy-1', 'jack-60'],
  );
  await portal.admin.releaseLegalHold(hold.hold_id);
});

test('history whose user_id eduVPN matched to a user written otherwise (MariaDB: QUINN is quinn’s) is kept by a hold on that user, and keeps its log id when the match changes', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('quinn')];
  await firstImport(records);
  const hold = await portal.admin.createLegalHold({
    user_id: 'quinn',
    reason: 'case 2026-19',
    until: formatAtom(new Date(Date.now() + 30 * 86_400_000)),
  });
  // As the reader hands them over: matched to quinn, written QUINN. connectionLogRetention is P1M.
  const written = [sessionEnded('quinn', 60), sessionEnded('quinn', 1)].map((entry) => ({
    ...entry,
    writtenUserId: asUserId('QUINN'),
  }));
  records.connectionLog = written;
  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.equal(outcome.applied?.inserted.connectionLog, 2, 'the hold on quinn keeps her older history');
  const log = await ctx.db
    .selectFrom('connection_log')
    .select(['connection_id', 'user_id'])
    .where('connection_id', 'in', ['quinn-60', 'quinn-1'])
    .orderBy('connection_id')
    .execute();
  assert.deepEqual(log, [
    { connection_id: 'quinn-1', user_id: 'quinn' },
    { connection_id: 'quinn-60', user_id: 'quinn' },
  ]);
  // A later run after eduVPN deleted quinn: her history matches no user and comes as written.
  records.connectionLog = written.map((entry) => ({ ...entry, userId: asUserId('QUINN') }));
  const again = await importAgainBringingNothing(records);
  assert.equal(again.counts.connectionLog.alreadyHere, 2, 'the same rows, found by their log ids');
  await portal.admin.releaseLegalHold(hold.hold_id);
});

/** Why the plan left each record it left, by the record's name. */
function reasonsOf(plan: ImportPlan): Map<string, string> {
  return new Map(plan.removedHere.map((removed) => [removed.record, removed.reason]));
}

test('a user destroyed here stays out of every later import, also once its receipt and the note of its import were pruned, and so does what eduVPN issued it since', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('kim')];
  records.wireGuardPeers = [eduVpnPeer('kim', 100)];
  await firstImport(records);
  // A year on (auditLogRetention) the receipt of the destroy goes, and with it the note naming kim.
  await receiptPrunedAndHousekeepingRun(await portal.admin.destroy('kim'));
  const kimNoted = await ctx.db.selectFrom('imported_records').select('record_id').where('record_id', '=', 'kim');
  assert.deepEqual(await kimNoted.execute(), [], 'no row names kim any more');
  // eduVPN, where kim is still an enabled user, issued kim another configuration meanwhile.
  records.wireGuardPeers.push(eduVpnPeer('kim', 101));
  const keys: string[] = records.wireGuardPeers.map((peer) => peer.publicKey);

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.equal((await usersWithIds(ctx.db, [asUserId('kim')])).size, 0, 'kim is not back');
  assert.deepEqual(await peersWithKeys(ctx.db, keys), []);
  assert.deepEqual(removedHereCounts(plan), { users: 1, wireGuardPeers: 2 });
  const reasons = reasonsOf(plan);
  assert.match(reasons.get('kim') ?? '', /^destroyed here at \S+$/);
  assert.match(reasons.get(keys[1] ?? '') ?? '', /^its user kim was destroyed here at \S+$/);
});

test('a user made here before the import with the id of one in eduVPN, then destroyed here, is not brought back by importing again, nor anything eduVPN holds of it', async () => {
  await portal.admin.create({ user_id: 'lena', profile_id: 'employees' }, 'application/x-wireguard-profile');
  const records = emptyRecords();
  records.users = [eduVpnUser('lena')];
  records.wireGuardPeers = [eduVpnPeer('lena', 102, { authKey: 'lena-app' })];
  records.authorizations = [appAuthorization('lena-app', 'lena')];
  const first = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.equal(first.plan.counts.users.alreadyHere, 1, 'the same id is the same user: here already, not brought');
  assert.equal(first.applied?.inserted.wireGuardPeers, 1, 'her eduVPN configuration came with the import');
  assert.notEqual(await portal.admin.destroy('lena'), null, 'a receipt');
  records.wireGuardPeers.push(eduVpnPeer('lena', 103));
  const keys: string[] = records.wireGuardPeers.map((peer) => peer.publicKey);

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.equal((await usersWithIds(ctx.db, [asUserId('lena')])).size, 0, 'lena is not back');
  assert.deepEqual(await peersWithKeys(ctx.db, keys), []);
  assert.deepEqual(await authorizationsHere(['lena-app']), []);
  assert.deepEqual(removedHereCounts(plan), { users: 1, authorizations: 1, wireGuardPeers: 2 });
  const reasons = reasonsOf(plan);
  assert.match(reasons.get('lena') ?? '', /^destroyed here at \S+$/);
  assert.match(reasons.get(keys[1] ?? '') ?? '', /^its user lena was destroyed here at \S+$/);
});

test('a user made and destroyed here before eduVPN was ever imported is not brought by the import, nor its configurations and authorizations there', async () => {
  await portal.admin.create({ user_id: 'mona', profile_id: 'employees' }, 'application/x-wireguard-profile');
  assert.notEqual(await portal.admin.destroy('mona'), null, 'a receipt');
  const records = emptyRecords();
  records.users = [eduVpnUser('mona')];
  records.wireGuardPeers = [eduVpnPeer('mona', 104, { authKey: 'mona-app' })];
  records.certificates = [eduVpnCertificate('mona')];
  records.authorizations = [appAuthorization('mona-app', 'mona')];

  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.deepEqual(Object.values(outcome.applied?.inserted ?? {}), [0, 0, 0, 0, 0, 0], 'nothing of mona comes');
  assert.ok(!(await portal.admin.users()).includes('mona'));
  assert.deepEqual(removedHereCounts(outcome.plan), {
    users: 1,
    authorizations: 1,
    wireGuardPeers: 1,
    certificates: 1,
  });
  const reasons = reasonsOf(outcome.plan);
  assert.match(reasons.get('mona') ?? '', /^destroyed here at \S+$/);
  assert.match(reasons.get('mona-app') ?? '', /^its user mona was destroyed here at \S+$/);
});

test('a user made again here after its destroy gets from an import what eduVPN issued it after the destroy, nothing from before', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('nora')];
  records.wireGuardPeers = [eduVpnPeer('nora', 105)];
  await firstImport(records);
  // eduVPN issued nora one configuration just before the destroy here, and one after it.
  const justBefore = formatAtom(new Date(Date.now() - 2000));
  assert.notEqual(await portal.admin.destroy('nora'), null, 'a receipt');
  const justAfter = formatAtom(new Date(Date.now() + 2000));
  const before = eduVpnPeer('nora', 106, { createdAt: justBefore });
  const after = eduVpnPeer('nora', 107, { createdAt: justAfter });
  records.wireGuardPeers.push(before, after);
  // The administrator gives nora access again.
  await portal.admin.create({ user_id: 'nora', profile_id: 'employees' }, 'application/x-wireguard-profile');

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.equal(outcome.applied?.inserted.wireGuardPeers, 1);
  assert.deepEqual(
    (await peersWithKeys(ctx.db, [records.wireGuardPeers[0]?.publicKey ?? '', before.publicKey, after.publicKey])).map(
      (peer) => peer.publicKey,
    ),
    [after.publicKey],
  );
  assert.deepEqual(removedHereCounts(plan), { wireGuardPeers: 2 });
  assert.match(
    reasonsOf(plan).get(before.publicKey) ?? '',
    /^issued before its user nora was made again here \(destroyed here at \S+, made again at \S+\)$/,
  );
});

test('a user made again here some time after its destroy gets from an import nothing eduVPN issued it before it was made again, also between the destroy and then', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('ruth')];
  records.wireGuardPeers = [eduVpnPeer('ruth', 111)];
  await firstImport(records);
  assert.notEqual(await portal.admin.destroy('ruth'), null, 'a receipt');
  await portal.admin.create({ user_id: 'ruth', profile_id: 'employees' }, 'application/x-wireguard-profile');
  // As if the administrator made ruth again two hours after the destroy: eduVPN issued ruth one
  // configuration an hour after the destroy (to whoever had the account then), one three hours after.
  const hour = 3600 * 1000;
  const madeAgain = formatAtom(new Date(Date.now() + 2 * hour));
  await ctx.db.updateTable('users').set({ created_at: madeAgain }).where('user_id', '=', 'ruth').execute();
  const between = eduVpnPeer('ruth', 112, { createdAt: formatAtom(new Date(Date.now() + hour)) });
  const after = eduVpnPeer('ruth', 113, { createdAt: formatAtom(new Date(Date.now() + 3 * hour)) });
  records.wireGuardPeers.push(between, after);

  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.equal(outcome.applied?.inserted.wireGuardPeers, 1);
  assert.deepEqual(
    await peersWithKeys(ctx.db, [between.publicKey]),
    [],
    'issued between the destroy and the making again',
  );
  assert.equal((await peersWithKeys(ctx.db, [after.publicKey])).length, 1);
  assert.match(
    reasonsOf(outcome.plan).get(between.publicKey) ?? '',
    /^issued before its user ruth was made again here \(destroyed here at \S+, made again at \S+\)$/,
  );
});

test('a configuration eduVPN issued to a user disabled here is not brought, and stays out after the user is enabled again', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('oscar')];
  records.wireGuardPeers = [eduVpnPeer('oscar', 108)];
  await firstImport(records);
  const [brought] = records.wireGuardPeers.map((peer) => peer.publicKey);
  assert.notEqual(await portal.admin.disableUser('oscar'), null, 'a receipt');
  // eduVPN, where oscar is still enabled, issues oscar a WireGuard and an OpenVPN configuration meanwhile.
  const issued = eduVpnPeer('oscar', 109);
  const certificate = eduVpnCertificate('oscar');
  records.wireGuardPeers.push(issued);
  records.certificates.push(certificate);

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), []);
  assert.deepEqual(await certificatesWithNames(ctx.db, [certificate.commonName]), []);
  assert.deepEqual(removedHereCounts(plan), { users: 1, wireGuardPeers: 1, certificates: 1 });
  assert.equal(
    reasonsOf(plan).get(issued.publicKey),
    'its user oscar is disabled here: the import brings it no configuration, also once enabled again',
  );

  // Enabling oscar puts back what oscar had here, and only that.
  await portal.admin.enableUser('oscar');
  assert.ok((await wantedOnNode()).includes(brought ?? ''));
  assert.ok(!(await wantedOnNode()).includes(issued.publicKey));
  const again = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), [], 'not brought after the enable either');
  assert.deepEqual(removedHereCounts(again), { wireGuardPeers: 1, certificates: 1 });
  assert.match(
    reasonsOf(again).get(certificate.commonName) ?? '',
    /^left by an import at \S+ while its user was disabled here: it stays left$/,
  );
});

test('a user eduVPN has disabled too gets its configurations from a run again, as one that stopped before them continues', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('pia', { isDisabled: true })];
  // The first run brought the users and stopped before the configurations.
  await firstImport(records);
  assert.ok((await portal.admin.disabledUsers()).includes('pia'));
  records.wireGuardPeers = [eduVpnPeer('pia', 110)];

  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.equal(outcome.applied?.inserted.wireGuardPeers, 1, 'brought, to stay off the nodes while pia is disabled');
  assert.deepEqual(removedHereCounts(outcome.plan), {});
  assert.ok(!(await wantedOnNode()).includes(records.wireGuardPeers[0]?.publicKey ?? ''));
});

test('a configuration eduVPN issued to a user disabled here stays out also once eduVPN disabled the user too, and after the user is enabled here', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('sam')];
  records.wireGuardPeers = [eduVpnPeer('sam', 114)];
  await firstImport(records);
  assert.notEqual(await portal.admin.disableUser('sam'), null, 'a receipt');
  // eduVPN, where sam is still enabled, issues sam a configuration, and later disables sam too.
  const issued = eduVpnPeer('sam', 115);
  records.wireGuardPeers.push(issued);
  records.users = [eduVpnUser('sam', { isDisabled: true })];

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), []);
  assert.equal(
    reasonsOf(plan).get(issued.publicKey),
    'its user sam is disabled here: the import brings it no configuration, also once enabled again',
  );
  await portal.admin.enableUser('sam');
  assert.ok(!(await wantedOnNode()).includes(issued.publicKey));
  records.users = [eduVpnUser('sam')];
  await importAgainBringingNothing(records);
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), [], 'not brought after the enable either');
});

test('a user disabled here while an import runs, after it began and before its configurations, gets none of eduVPN’s configurations not here', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('tom')];
  records.wireGuardPeers = [eduVpnPeer('tom', 116)];
  await firstImport(records);
  const issued = eduVpnPeer('tom', 117);
  records.wireGuardPeers.push(issued);
  // The administrator disables tom while the import checks its last kind, before it writes.
  const deployment = inMemoryDeployment(records);
  let disabled = false;
  const racing = {
    ...deployment,
    async *dailyStatistics() {
      if (!disabled) {
        disabled = true;
        assert.notEqual(await portal.admin.disableUser('tom'), null, 'a receipt');
      }
      yield* deployment.dailyStatistics();
    },
  };

  const outcome = await importEduVpn(ctx, racing);
  assert.ok(disabled);
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.equal(outcome.applied?.inserted.wireGuardPeers, 0);
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), []);
  await portal.admin.enableUser('tom');
  const again = await planEduVpnImport(ctx, inMemoryDeployment(records));
  assert.match(
    reasonsOf(again).get(issued.publicKey) ?? '',
    /^left by an import at \S+ while its user was disabled here: it stays left$/,
  );
});

test('a user the import brought disabled, and disabled here by an administrator since, gets no configuration eduVPN issued it', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('una', { isDisabled: true })];
  await firstImport(records);
  // An administrator disables una here too (during an incident, say): the disable is this portal's now.
  assert.notEqual(await portal.admin.disableUser('una'), null, 'a receipt');
  const issued = eduVpnPeer('una', 118);
  records.wireGuardPeers = [issued];

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  await importAgainBringingNothing(records);
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), []);
  assert.deepEqual(removedHereCounts(plan), { wireGuardPeers: 1 });
});

test('a user destroyed here by an instance still on a version before destroyed_users (a rolling upgrade) is not brought by the import, nor what eduVPN holds of it', async () => {
  await portal.admin.create({ user_id: 'vera', profile_id: 'employees' }, 'application/x-wireguard-profile');
  assert.notEqual(await portal.admin.destroy('vera'), null, 'a receipt');
  // The earlier version's destroy: the receipt, and no row in destroyed_users.
  await ctx.db
    .deleteFrom('destroyed_users')
    .where('user_digest', '=', destroyedUserDigest(asUserId('vera')))
    .execute();
  const records = emptyRecords();
  records.users = [eduVpnUser('vera')];
  records.wireGuardPeers = [eduVpnPeer('vera', 119)];

  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.deepEqual(Object.values(outcome.applied?.inserted ?? {}), [0, 0, 0, 0, 0, 0], 'nothing of vera comes');
  assert.deepEqual(removedHereCounts(outcome.plan), { users: 1, wireGuardPeers: 1 });
  assert.match(reasonsOf(outcome.plan).get('vera') ?? '', /^destroyed here at \S+$/);
});

test('a user the import brought disabled and the directory then calls inactive gets no configuration eduVPN issued it, also once enabled here', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('wes', { isDisabled: true })];
  await firstImport(records);
  // The directory links wes, inactive: the disable is the directory's now, not the import's.
  const scim = scimClient(portal, await makeAdminKey(portal, 'okta-wes', { scope: 'scim' }));
  const linked = await scim.send('POST', 'Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'wes',
    active: false,
  });
  assert.equal(linked.status, 201, JSON.stringify(linked.body));
  const issued = eduVpnPeer('wes', 119);
  records.wireGuardPeers = [issued];

  const plan = await importAgainBringingNothing(records);
  assert.equal(
    reasonsOf(plan).get(issued.publicKey),
    'its user wes is disabled here: the import brings it no configuration, also once enabled again',
  );
  // Wes comes back: the directory calls him active, which enables him here (an administrator's
  // enable alone is refused while the directory calls him inactive).
  const back = await scim.send('PATCH', `Users/${String(linked.body?.['id'])}`, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    Operations: [{ op: 'replace', path: 'active', value: true }],
  });
  assert.equal(back.body?.['active'], true, JSON.stringify(back.body));
  assert.ok(!(await wantedOnNode()).includes(issued.publicKey));
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), []);
});

test('a user eduVPN has disabled too gets its authorizations from a run again, as one that stopped before them continues', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('xena', { isDisabled: true })];
  // The first run brought the users and stopped before the authorizations.
  await firstImport(records);
  records.authorizations = [appAuthorization('xena-app', 'xena')];

  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.equal(outcome.applied?.inserted.authorizations, 1, 'brought, as a run that does not stop brings it');
  assert.deepEqual(removedHereCounts(outcome.plan), {});
  assert.deepEqual(await authorizationsHere(['xena-app']), ['xena-app']);
});
