// Each conflict the eduVPN import finds, against a real portal and database (both databases in
// the suite), named with its record: a key, address pair or common name used here by another
// configuration, a place this portal's pools cannot hold, a profile, node or protocol that is
// not here, a configuration or authorization whose user eduVPN does not have, a user id this
// portal cannot hold (with all that names it), a user whose disabled flag differs, key files
// that differ or do not fit, a day's statistics this portal counted otherwise. While there is
// one, the import writes nothing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import {
  importEduVpn,
  planEduVpnImport,
  type ImportConflict,
  type ImportContext,
} from '../../../src/core/importing/index.js';
import { CertificateAuthority } from '../../../src/openvpn/certificate-authority.js';
import { asNodeNumber, asProfileId, asUserId, asWireGuardKey } from '../../../src/shared/ids.js';
import { dailyStats, insertDailyStatsIfMissing } from '../../../src/storage/statistics.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import {
  eduVpnCertificate,
  eduVpnPeer,
  eduVpnUser,
  emptyRecords,
  inMemoryDeployment,
  NO_KEYS,
  type EduVpnRecords,
} from '../../support/in-memory-eduvpn.js';
import { employeesWithOpenVpn, haveEmployeesTlsCryptKey } from '../../support/import-portal.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';

let portal: TestPortal;
let ctx: ImportContext;
const here = {
  peer: eduVpnPeer('alice', 0),
  certificate: eduVpnCertificate('alice'),
};

before(async () => {
  portal = await startTestPortal({
    config: {
      ProfileList: [
        employeesWithOpenVpn,
        {
          profileId: 'guests',
          displayName: 'Guests',
          hostName: 'vpn.example.org',
          wRangeFour: '10.46.0.0/24',
          wRangeSix: 'fd46::/64',
          nodeUrl: UNREACHABLE_NODE,
        },
      ],
    },
  });
  ctx = portal.portal.ctx;
  haveEmployeesTlsCryptKey(portal);
  // What is here already: alice with a WireGuard and an OpenVPN configuration.
  const records = emptyRecords();
  records.users = [eduVpnUser('alice')];
  records.wireGuardPeers = [here.peer];
  records.certificates = [here.certificate];
  assert.notEqual((await importEduVpn(ctx, inMemoryDeployment(records))).applied, null);
});
after(() => portal.close());

/**
 * eduVPN as it is at a later run: it still has what the first run brought (alice and her two
 * configurations), and `records` besides.
 */
function eduVpnStill(records: EduVpnRecords, options: Parameters<typeof inMemoryDeployment>[1] = {}) {
  return inMemoryDeployment(
    {
      ...records,
      users: [eduVpnUser('alice'), ...records.users],
      wireGuardPeers: [here.peer, ...records.wireGuardPeers],
      certificates: [here.certificate, ...records.certificates],
    },
    options,
  );
}

/** The conflict about `record`, asserted to be there once. */
function conflictAbout(conflicts: readonly ImportConflict[], record: string): ImportConflict {
  const found = conflicts.filter((conflict) => conflict.record === record);
  assert.equal(found.length, 1, `one conflict about ${record}: ${JSON.stringify(conflicts, null, 2)}`);
  return found[0] as ImportConflict;
}

test('every configuration that cannot be brought is a conflict naming it and saying why', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('alice', { isDisabled: true }), eduVpnUser('zed')];
  const sameKey = eduVpnPeer('zed', 10, { publicKey: here.peer.publicKey });
  const sameAddresses = eduVpnPeer('zed', 0);
  const noProfile = eduVpnPeer('zed', 11, { profileId: asProfileId('nope') });
  const noNode = eduVpnPeer('zed', 12, { nodeNumber: asNodeNumber(3) });
  const outside = eduVpnPeer('zed', 13, { ipFour: '10.99.0.5' });
  const unpaired = eduVpnPeer('zed', 14, { ipSix: 'fd44::99' });
  records.wireGuardPeers = [sameKey, sameAddresses, noProfile, noNode, outside, unpaired];
  const sameName = eduVpnCertificate('zed', { commonName: here.certificate.commonName });
  const noOpenVpn = eduVpnCertificate('zed', { profileId: asProfileId('guests') });
  records.certificates = [sameName, noOpenVpn];

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  const { conflicts } = plan;
  assert.equal(plan.conflictCount, 9);
  assert.match(conflictAbout(conflicts, 'alice').reason, /disabled in eduVPN/);
  assert.match(
    conflictAbout(conflicts, sameKey.publicKey).reason,
    /public key is used here by another configuration \(user alice/,
  );
  assert.match(
    conflictAbout(conflicts, sameAddresses.publicKey).reason,
    new RegExp(
      `addresses 10\\.44\\.0\\.2, fd44::2 are used here by configuration ${here.peer.publicKey.replace(/[+/]/g, '\\$&')}`,
    ),
  );
  assert.match(
    conflictAbout(conflicts, noProfile.publicKey).reason,
    /profile nope is not configured here \(profiles here: employees, guests\)/,
  );
  assert.match(
    conflictAbout(conflicts, noNode.publicKey).reason,
    /node 3 is not one of profile employees's nodes here/,
  );
  assert.match(
    conflictAbout(conflicts, outside.publicKey).reason,
    /outside this portal's pool for profile employees on node 0/,
  );
  assert.match(conflictAbout(conflicts, unpaired.publicKey).reason, /not a pair of this portal's pool/);
  assert.match(
    conflictAbout(conflicts, sameName.commonName).reason,
    /common name is used here by another configuration/,
  );
  assert.match(
    conflictAbout(conflicts, noOpenVpn.commonName).reason,
    /profile guests offers no OpenVPN on node 0 here/,
  );
  assert.deepEqual(plan.counts.wireGuardPeers, {
    toBring: 0,
    alreadyHere: 0,
    conflicting: 6,
    expired: 0,
    removedHere: 0,
  });

  const refused = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.equal(refused.applied, null);
  assert.deepEqual((await portal.admin.users()).sort(), ['alice'], 'nothing was written');
  assert.deepEqual(await portal.admin.disabledUsers(), []);
});

test('a conflict over a profile or node not here warns that eduVPN may have retired it: its rows are to delete there, not to add here', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('rita')];
  // eduVPN took `retired` out of its config.php and node 3 off `employees`: these no longer connect there.
  const ofRetiredProfile = eduVpnCertificate('rita', { profileId: asProfileId('retired') });
  const ofRetiredNode = eduVpnPeer('rita', 30, { nodeNumber: asNodeNumber(3) });
  records.certificates = [ofRetiredProfile];
  records.wireGuardPeers = [ofRetiredNode];

  const { conflicts } = await planEduVpnImport(ctx, eduVpnStill(records));
  assert.equal(
    conflictAbout(conflicts, ofRetiredProfile.commonName).reason,
    "profile retired is not configured here (profiles here: employees, guests); if eduVPN no longer serves profile retired, these configurations do not connect there either, and adding the profile here would let them connect again: delete their rows in eduVPN's database instead",
  );
  assert.equal(
    conflictAbout(conflicts, ofRetiredNode.publicKey).reason,
    "node 3 is not one of profile employees's nodes here (0); if eduVPN no longer serves profile employees on node 3, these configurations do not connect there either, and adding the node to the profile here would let them connect again: delete their rows in eduVPN's database instead",
  );
});

test('a configuration or authorization whose user eduVPN does not have is a conflict, and nothing is written', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('yves')];
  const peer = eduVpnPeer('nobody', 20, { userFound: false });
  const certificate = eduVpnCertificate('nobody', { userFound: false });
  records.wireGuardPeers = [peer, eduVpnPeer('yves', 21)];
  records.certificates = [certificate];
  records.authorizations = [
    {
      authKey: 'nobody-app',
      userId: asUserId('nobody'),
      userFound: false,
      clientId: 'org.eduvpn.app.linux',
      scope: 'config',
      authorizedAt: '2026-10-01T08:00:00+00:00',
      expiresAt: '2099-01-01T00:00:00+00:00',
    },
  ];

  const refused = await importEduVpn(ctx, eduVpnStill(records));
  assert.equal(refused.applied, null);
  assert.equal(refused.plan.conflictCount, 3);
  for (const record of [peer.publicKey, certificate.commonName, 'nobody-app'])
    assert.match(conflictAbout(refused.plan.conflicts, record).reason, /user nobody is not in eduVPN's table users/);
  assert.deepEqual((await portal.admin.users()).sort(), ['alice'], 'nothing was written');
});

test('a user whose id is longer than 255 characters or holds a NUL is a conflict with all it has, found before anything is written', async () => {
  // eduVPN's SQLite database does not enforce its VARCHAR(255): such ids can be there.
  const long = 'l'.repeat(256);
  const withNul = 'nul\u0000user';
  // 255 characters, 510 UTF-16 units: this portal holds it (its columns count characters).
  const longest = '😀'.repeat(255);
  const records = emptyRecords();
  records.users = [eduVpnUser(long), eduVpnUser(withNul), eduVpnUser(longest)];
  const peer = eduVpnPeer(long, 40);
  const certificate = eduVpnCertificate(long);
  const peerWithNul = eduVpnPeer(withNul, 41);
  records.wireGuardPeers = [peer, peerWithNul];
  records.certificates = [certificate];
  records.authorizations = [
    {
      authKey: 'long-app',
      userId: asUserId(long),
      userFound: true,
      clientId: 'org.eduvpn.app.linux',
      scope: 'config',
      authorizedAt: '2026-10-01T08:00:00+00:00',
      expiresAt: '2099-01-01T00:00:00+00:00',
    },
  ];
  const connectedAt = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
  records.connectionLog = [
    {
      userId: asUserId(long),
      writtenUserId: asUserId(long),
      profileId: asProfileId('employees'),
      vpnProto: 'openvpn',
      connectionId: certificate.commonName,
      ipFour: '10.45.0.2',
      ipSix: 'fd45::2',
      connectedAt,
      disconnectedAt: null,
      bytesIn: null,
      bytesOut: null,
    },
  ];

  const plan = await planEduVpnImport(ctx, eduVpnStill(records));
  assert.equal(plan.conflictCount, 7, JSON.stringify(plan.conflicts, null, 2));
  assert.match(
    conflictAbout(plan.conflicts, long).reason,
    /^the user id is 256 characters long; this portal and its Admin API take at most 255/,
  );
  assert.match(conflictAbout(plan.conflicts, withNul).reason, /contains a NUL character/);
  assert.match(conflictAbout(plan.conflicts, peerWithNul.publicKey).reason, /^its user cannot be brought: .*NUL/);
  for (const record of [peer.publicKey, certificate.commonName, 'long-app'])
    assert.match(
      conflictAbout(plan.conflicts, record).reason,
      /^its user cannot be brought: the user id is 256 characters long/,
    );
  assert.match(
    conflictAbout(plan.conflicts, `${certificate.commonName} connected at ${connectedAt}`).reason,
    /^the user of this history row cannot be brought/,
  );
  assert.equal(plan.counts.users.toBring, 1, 'the 255-character user is brought');

  const refused = await importEduVpn(ctx, eduVpnStill(records));
  assert.equal(refused.applied, null);
  assert.deepEqual((await portal.admin.users()).sort(), ['alice'], 'nothing was written');
});

test('the import of a user with a 256-character id stops at the plan, not at a database error in the middle of the writes', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('zoe'), eduVpnUser('m'.repeat(256))];
  records.wireGuardPeers = [eduVpnPeer('zoe', 42)];

  const refused = await importEduVpn(ctx, eduVpnStill(records));
  assert.equal(refused.applied, null);
  assert.equal(refused.plan.conflictCount, 1);
  assert.deepEqual((await portal.admin.users()).sort(), ['alice'], 'not even zoe was written');
});

test('key files here that hold other keys, and node keys that do not fit the issued files, are conflicts', async () => {
  const otherCa = await CertificateAuthority.create({ now: new Date(), notAfter: new Date(Date.now() + 86_400_000) });
  const named = generateWireGuardKeyPair();
  const node5 = generateWireGuardKeyPair();
  const keys = {
    ...NO_KEYS,
    adminApiKey: 'ff'.repeat(32),
    openVpnCa: { certificatePem: otherCa.certificatePem, privateKeyPem: otherCa.privateKeyPem },
    // Node 0's files name one key, and another private key was given for it.
    wireGuardPrivateKeys: new Map([[asNodeNumber(0), asWireGuardKey(generateWireGuardKeyPair().privateKey)]]),
    // Node 5's files name a key whose private half was not given, and nothing of node 5 is
    // brought: told as not needed, no conflict.
    wireGuardPublicKeys: new Map([
      [asNodeNumber(0), asWireGuardKey(named.publicKey)],
      [asNodeNumber(5), asWireGuardKey(node5.publicKey)],
    ]),
  };
  const secretBefore = readFileSync(ctx.keys.adminApiKeyPath, 'utf8');
  const plan = await planEduVpnImport(ctx, eduVpnStill(emptyRecords(), { keys }));
  const { conflicts } = plan;
  assert.equal(plan.conflictCount, 3, JSON.stringify(plan.conflicts, null, 2));
  assert.match(
    conflictAbout(conflicts, ctx.keys.adminApiKeyPath).reason,
    /Admin API secret here is another key than eduVPN's/,
  );
  assert.match(
    conflictAbout(conflicts, ctx.openVpnKeys.caCertificatePath).reason,
    /OpenVPN CA here is another key than eduVPN's; it is never replaced \(1 OpenVPN configurations here were issued by it\)/,
  );
  assert.match(conflictAbout(conflicts, ctx.keys.wireGuardKeyPath(asNodeNumber(0))).reason, /but eduVPN's files name/);
  assert.deepEqual(
    plan.keysNotNeeded.map((key) => key.name),
    ['node 5 WireGuard public key'],
  );
  assert.equal((await importEduVpn(ctx, eduVpnStill(emptyRecords(), { keys }))).applied, null);
  assert.equal(readFileSync(ctx.keys.adminApiKeyPath, 'utf8'), secretBefore, 'the secret here was not replaced');
});

test('without its own public key file, a node key that is another node’s, or a public key given as the private key, is a conflict naming the file', async () => {
  // eduVPN has wireguard.3.public.key only; the keys given for nodes 4 and 6 were mixed up.
  const node3 = generateWireGuardKeyPair();
  const keys = {
    ...NO_KEYS,
    wireGuardPublicKeys: new Map([[asNodeNumber(3), asWireGuardKey(node3.publicKey)]]),
    wireGuardPrivateKeys: new Map([
      [asNodeNumber(4), asWireGuardKey(node3.privateKey)],
      [asNodeNumber(6), asWireGuardKey(node3.publicKey)],
    ]),
  };
  const plan = await planEduVpnImport(ctx, eduVpnStill(emptyRecords(), { keys }));
  assert.equal(plan.conflictCount, 2, JSON.stringify(plan.conflicts, null, 2));
  assert.equal(
    conflictAbout(plan.conflicts, ctx.keys.wireGuardKeyPath(asNodeNumber(4))).reason,
    `node 4: the WireGuard private key given is node 3's (eduVPN's wireguard.3.public.key names its public key ${node3.publicKey}); the WireGuard files issued for node 4 would not connect`,
  );
  assert.match(
    conflictAbout(plan.conflicts, ctx.keys.wireGuardKeyPath(asNodeNumber(6))).reason,
    /^node 6: the WireGuard private key given is eduVPN's public key of node 3 \(wireguard\.3\.public\.key\), not a private key/,
  );
  for (const conflict of plan.conflicts) assert.ok(!conflict.reason.includes(node3.privateKey));
  assert.deepEqual(plan.keyFiles, []);
});

test('the same node key given for two nodes is a conflict for each, since the files of one of them would not connect', async () => {
  // eduVPN's copy holds neither node's public key file, and node 3's wireguard.key was given for node 4 too.
  const node3 = generateWireGuardKeyPair();
  const keys = {
    ...NO_KEYS,
    wireGuardPrivateKeys: new Map([
      [asNodeNumber(3), asWireGuardKey(node3.privateKey)],
      [asNodeNumber(4), asWireGuardKey(node3.privateKey)],
    ]),
  };
  const plan = await planEduVpnImport(ctx, eduVpnStill(emptyRecords(), { keys }));
  assert.equal(plan.conflictCount, 2, JSON.stringify(plan.conflicts, null, 2));
  assert.equal(
    conflictAbout(plan.conflicts, ctx.keys.wireGuardKeyPath(asNodeNumber(3))).reason,
    "node 3: the WireGuard private key given was also given for node 4; each node has a key of its own, so the WireGuard files issued for one of them would not connect: give each node's own /etc/vpn-server-node/keys/wireguard.key",
  );
  assert.match(
    conflictAbout(plan.conflicts, ctx.keys.wireGuardKeyPath(asNodeNumber(4))).reason,
    /^node 4: the WireGuard private key given was also given for node 3;/,
  );
  for (const conflict of plan.conflicts) assert.ok(!conflict.reason.includes(node3.privateKey));
  assert.deepEqual(plan.keyFiles, []);
  assert.equal((await importEduVpn(ctx, eduVpnStill(emptyRecords(), { keys }))).applied, null);
});

test('a node key eduVPN’s own files confirm for two nodes (a node cloned with its key) is no conflict', async () => {
  const cloned = generateWireGuardKeyPair();
  const keys = {
    ...NO_KEYS,
    wireGuardPublicKeys: new Map([
      [asNodeNumber(3), asWireGuardKey(cloned.publicKey)],
      [asNodeNumber(4), asWireGuardKey(cloned.publicKey)],
    ]),
    wireGuardPrivateKeys: new Map([
      [asNodeNumber(3), asWireGuardKey(cloned.privateKey)],
      [asNodeNumber(4), asWireGuardKey(cloned.privateKey)],
    ]),
  };
  const plan = await planEduVpnImport(ctx, eduVpnStill(emptyRecords(), { keys }));
  assert.equal(plan.conflictCount, 0, JSON.stringify(plan.conflicts, null, 2));
  assert.deepEqual(plan.keyWarnings, [], 'both were checked against their own public key files');
});

test('key files that are missing here are brought, and the same ones already here are no conflict', async () => {
  const tlsCrypt = ctx.openVpnKeys.tlsCryptKey('employees');
  const keys = {
    ...NO_KEYS,
    adminApiKey: readFileSync(ctx.keys.adminApiKeyPath, 'utf8'),
    nodeKeys: new Map([[asNodeNumber(2), 'ab'.repeat(32)]]),
    tlsCryptKeys: new Map([[asProfileId('employees'), tlsCrypt]]),
  };
  const outcome = await importEduVpn(ctx, eduVpnStill(emptyRecords(), { keys }));
  assert.equal(outcome.plan.conflictCount, 0);
  assert.deepEqual(
    outcome.plan.keyFiles.map((file) => [file.name, file.state]),
    [
      ['Admin API secret', 'same'],
      ['node 2 secret', 'missing'],
      ['tls-crypt key of profile employees', 'same'],
    ],
  );
  assert.equal(outcome.applied?.keyFiles, 1);
  assert.equal(ctx.keys.nodeSecret(asNodeNumber(2)), 'ab'.repeat(32));
});

test('a day this portal ran before the move and counted nobody on takes eduVPN’s figures; a day it counted use on with others is a conflict', async () => {
  const employees = asProfileId('employees');
  await insertDailyStatsIfMissing(ctx.db, [
    { date: '2026-10-01', profileId: employees, maxConnectionCount: 0, uniqueUserCount: 0 },
    { date: '2026-10-02', profileId: employees, maxConnectionCount: 5, uniqueUserCount: 2 },
  ]);
  const records = emptyRecords();
  records.dailyStatistics = [
    { date: '2026-10-01', profileId: employees, maxConnectionCount: 40, uniqueUserCount: 25 },
    { date: '2026-10-02', profileId: employees, maxConnectionCount: 6, uniqueUserCount: 3 },
  ];
  const plan = await planEduVpnImport(ctx, eduVpnStill(records));
  assert.deepEqual(plan.counts.dailyStatistics, {
    toBring: 1,
    alreadyHere: 0,
    conflicting: 1,
    expired: 0,
    removedHere: 0,
  });
  assert.deepEqual(
    plan.conflicts.map((conflict) => conflict.record),
    ['2026-10-02 employees'],
  );

  records.dailyStatistics = records.dailyStatistics.slice(0, 1);
  const outcome = await importEduVpn(ctx, eduVpnStill(records));
  assert.equal(outcome.applied?.inserted.dailyStatistics, 1);
  assert.deepEqual(
    (await dailyStats(ctx.db, { since: '2026-10-01', until: '2026-10-02' })).map((row) => [
      row.date,
      row.maxConnectionCount,
      row.uniqueUserCount,
    ]),
    [
      ['2026-10-01', 40, 25],
      ['2026-10-02', 5, 2],
    ],
  );
});
