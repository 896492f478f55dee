// The eduVPN import against a real portal and database (both databases in the suite), with the
// deployment held in arrays: the dry run's counts, the import of every kind, a second run that
// changes nothing, disabled users' peers that never reach a node, and the address pools after
// the import.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { importEduVpn, planEduVpnImport, type ImportContext } from '../../../src/core/importing/index.js';
import { asNodeNumber, asUserId } from '../../../src/shared/ids.js';
import { formatAtom } from '../../../src/shared/time.js';
import { certificatesOfUser } from '../../../src/storage/certificates.js';
import { dailyStats } from '../../../src/storage/statistics.js';
import { latestRevision } from '../../../src/storage/revisions.js';
import { peersOfUser, peersWantedOnNode } from '../../../src/storage/wg-peers.js';
import { auditLog } from '../../support/admin-keys.js';
import {
  eduVpnCertificate,
  eduVpnPeer,
  eduVpnUser,
  emptyRecords,
  inMemoryDeployment,
  type EduVpnRecords,
} from '../../support/in-memory-eduvpn.js';
import { startImportPortal } from '../../support/import-portal.js';
import type { TestPortal } from '../../support/test-portal.js';

const PAST = '2026-01-01T00:00:00+00:00';

/** alice (two peers, one expired, a certificate), bob (disabled, one peer), carol (no configuration). */
function deploymentRecords(): EduVpnRecords {
  const records = emptyRecords();
  records.users = [
    eduVpnUser('alice'),
    eduVpnUser('bob', { isDisabled: true }),
    eduVpnUser('carol', { lastSeen: '2026-09-09T09:09:09+00:00' }),
  ];
  records.wireGuardPeers = [
    eduVpnPeer('alice', 0, { authKey: 'app-auth', createdAt: '2026-05-05T05:05:05+00:00' }),
    eduVpnPeer('alice', 2, { expiresAt: PAST }),
    eduVpnPeer('bob', 5),
  ];
  records.certificates = [eduVpnCertificate('alice')];
  records.authorizations = [
    // Expired, but a configuration names it: brought.
    {
      authKey: 'app-auth',
      userId: asUserId('alice'),
      userFound: true,
      clientId: 'org.eduvpn.app.linux',
      scope: 'config',
      authorizedAt: PAST,
      expiresAt: PAST,
    },
    // Expired, named by nothing: left.
    {
      authKey: 'old-auth',
      userId: asUserId('bob'),
      userFound: true,
      clientId: 'org.eduvpn.app.linux',
      scope: 'config',
      authorizedAt: PAST,
      expiresAt: PAST,
    },
  ];
  const firstPeer = records.wireGuardPeers[0];
  assert.ok(firstPeer !== undefined);
  records.connectionLog = [
    {
      userId: asUserId('alice'),
      writtenUserId: asUserId('alice'),
      profileId: firstPeer.profileId,
      vpnProto: 'wireguard',
      connectionId: firstPeer.publicKey,
      ipFour: firstPeer.ipFour,
      ipSix: firstPeer.ipSix,
      // Within the retention here (connectionLogRetention, P1M): older history is left.
      connectedAt: formatAtom(new Date(Date.now() - 2 * 3600_000)),
      disconnectedAt: formatAtom(new Date(Date.now() - 3600_000)),
      bytesIn: 100,
      bytesOut: 200,
    },
  ];
  records.dailyStatistics = [
    { date: '2026-11-01', profileId: firstPeer.profileId, maxConnectionCount: 3, uniqueUserCount: 2 },
  ];
  return records;
}

let portal: TestPortal;
let ctx: ImportContext;

before(async () => {
  portal = await startImportPortal();
  ctx = portal.portal.ctx;
});
after(() => portal.close());

test('the dry run counts what the import would bring, what is left because it expired, and changes nothing', async () => {
  const plan = await planEduVpnImport(ctx, inMemoryDeployment(deploymentRecords()));
  assert.equal(plan.schemaVersion, '2023011801');
  assert.equal(plan.conflictCount, 0);
  assert.deepEqual(plan.counts, {
    users: { toBring: 3, alreadyHere: 0, conflicting: 0, expired: 0, removedHere: 0 },
    authorizations: { toBring: 1, alreadyHere: 0, conflicting: 0, expired: 1, removedHere: 0 },
    wireGuardPeers: { toBring: 2, alreadyHere: 0, conflicting: 0, expired: 1, removedHere: 0 },
    certificates: { toBring: 1, alreadyHere: 0, conflicting: 0, expired: 0, removedHere: 0 },
    connectionLog: { toBring: 1, alreadyHere: 0, conflicting: 0, expired: 0, removedHere: 0 },
    dailyStatistics: { toBring: 1, alreadyHere: 0, conflicting: 0, expired: 0, removedHere: 0 },
  });
  assert.deepEqual(await portal.admin.users(), []);
});

test('the import brings every kind, and a second run finds everything here and changes nothing', async () => {
  const records = deploymentRecords();
  const revisionBefore = await latestRevision(ctx.db);
  const first = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(first.applied?.inserted, {
    users: 3,
    authorizations: 1,
    wireGuardPeers: 2,
    certificates: 1,
    connectionLog: 1,
    dailyStatistics: 1,
  });
  // The listings (and their cache) see the new users at once.
  assert.deepEqual((await portal.admin.users()).sort(), ['alice', 'bob', 'carol']);
  assert.deepEqual(await portal.admin.disabledUsers(), ['bob']);

  const [alicePeer] = await peersOfUser(ctx.db, asUserId('alice'));
  assert.equal(alicePeer?.publicKey, records.wireGuardPeers[0]?.publicKey);
  assert.deepEqual([alicePeer?.ipFour, alicePeer?.ipSix, alicePeer?.poolIndex], ['10.44.0.2', 'fd44::2', 0]);
  assert.equal(alicePeer?.authKey, 'app-auth');
  assert.ok((alicePeer?.revision ?? 0) > revisionBefore, 'imported peers carry a new revision');
  assert.equal(
    (await certificatesOfUser(ctx.db, asUserId('alice')))[0]?.commonName,
    records.certificates[0]?.commonName,
  );
  assert.deepEqual(
    (await dailyStats(ctx.db, { until: '2026-11-01' })).map((row) => [row.date, row.maxConnectionCount]),
    [['2026-11-01', 3]],
  );
  const users = await ctx.db.selectFrom('users').select(['user_id', 'created_at']).orderBy('user_id').execute();
  assert.deepEqual(
    users.map((user) => [user.user_id, user.created_at]),
    [
      ['alice', '2026-05-05T05:05:05+00:00'],
      ['bob', '2026-10-01T08:00:00+00:00'],
      ['carol', '2026-09-09T09:09:09+00:00'],
    ],
    'a user is as old as its earliest configuration, else its last sign-in',
  );
  const log = await ctx.db.selectFrom('connection_log').selectAll().execute();
  assert.deepEqual(
    log.map((row) => [row.user_id, row.node_number, row.originating_ip]),
    [['alice', 0, null]],
  );

  const second = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(Object.values(second.applied?.inserted ?? {}), [0, 0, 0, 0, 0, 0]);
  assert.deepEqual(
    Object.values(second.plan.counts).map((counts) => [counts.toBring, counts.alreadyHere]),
    [
      [0, 3],
      [0, 1],
      [0, 2],
      [0, 1],
      [0, 1],
      [0, 1],
    ],
  );
  const rows = (await auditLog(portal)).filter((row) => row.call === 'import eduvpn');
  assert.equal(rows.length, 1, 'one audit row for the import that brought something, none for the one that did not');
  assert.equal(rows[0]?.keyName, '(command line)');
  assert.equal(rows[0]?.parameters['wireGuardPeers'], '2');
});

test("a disabled user's imported peers are never wanted on a node, an enabled user's are", async () => {
  const wanted = await peersWantedOnNode(ctx.db, { now: formatAtom(new Date()), nodeNumber: asNodeNumber(0) });
  const alice = await peersOfUser(ctx.db, asUserId('alice'));
  const bob = await peersOfUser(ctx.db, asUserId('bob'));
  assert.equal(bob.length, 1, "bob's peer was imported");
  assert.deepEqual(wanted.map((peer) => peer.publicKey).sort(), alice.map((peer) => peer.publicKey).sort());
});

test('after the import the next create takes the lowest free address, never an imported one', async () => {
  // Imported: index 0 (alice) and 5 (bob); index 2 was alice's expired peer, not brought.
  const taken: string[] = [];
  for (let count = 0; count < 5; count++) {
    const created = await portal.admin.create(
      { user_id: 'dave', profile_id: 'employees' },
      'application/x-wireguard-profile',
    );
    taken.push(/Address = ([^/]+)\//.exec(created.body)?.[1] ?? 'none');
  }
  assert.deepEqual(taken, ['10.44.0.3', '10.44.0.4', '10.44.0.5', '10.44.0.6', '10.44.0.8']);
});
