// The eduVPN import and a profile's `aclPermissionList` (both databases in the suite): eduVPN's
// node refuses an OpenVPN certificate whose user holds none of the listed permissions, and this
// portal does not check the list, so the import leaves such a certificate, names it with why,
// and notes it so that a later run leaves it too. A user holding a listed permission keeps
// theirs, and WireGuard peers, which eduVPN does not check against the list, are brought.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { importEduVpn, type ImportContext } from '../../../src/core/importing/index.js';
import { authorizeOpenVpnConnect } from '../../../src/core/sessions/index.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { certificatesWithNames } from '../../../src/storage/certificates.js';
import { peersWithKeys } from '../../../src/storage/wg-peers.js';
import {
  eduVpnCertificate,
  eduVpnPeer,
  eduVpnUser,
  emptyRecords,
  inMemoryDeployment,
} from '../../support/in-memory-eduvpn.js';
import { employeesWithOpenVpn, haveEmployeesTlsCryptKey } from '../../support/import-portal.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

let portal: TestPortal;
let ctx: ImportContext;

before(async () => {
  portal = await startTestPortal({
    config: { ProfileList: [{ ...employeesWithOpenVpn, aclPermissionList: ['staff'] }] },
  });
  await portal.reconcile();
  haveEmployeesTlsCryptKey(portal);
  ctx = portal.portal.ctx;
});
after(() => portal.close());

/** What this portal answers a node asking to let `commonName` in on `employees`. */
async function connects(commonName: string): Promise<boolean> {
  const decision = await authorizeOpenVpnConnect(portal.portal.ctx, {
    nodeNumber: asNodeNumber(0),
    profileId: 'employees',
    commonName,
    originatingIp: null,
    ipFour: '10.45.0.9',
    ipSix: 'fd45::1000',
    reauth: false,
    nodeGaveUp: new AbortController().signal,
  });
  return decision.allowed;
}

test('an OpenVPN certificate eduVPN refuses for its profile ACL is left and reported, and stays left; WireGuard and permitted users are brought', async () => {
  const records = emptyRecords();
  // mallory lost "staff" at her last sign-in in eduVPN: its node refuses her OpenVPN certificate.
  // carol's permission differs in case only: eduVPN compares exact strings, and refuses her too.
  records.users = [
    eduVpnUser('mallory', { permissionList: '["students"]' }),
    eduVpnUser('bob', { permissionList: '["students","staff"]' }),
    eduVpnUser('carol', { permissionList: '["Staff"]' }),
  ];
  const mallorys = eduVpnCertificate('mallory');
  const bobs = eduVpnCertificate('bob');
  const carols = eduVpnCertificate('carol');
  records.certificates = [mallorys, bobs, carols];
  const mallorysPeer = eduVpnPeer('mallory', 0);
  records.wireGuardPeers = [mallorysPeer];

  const outcome = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  assert.equal(outcome.applied?.inserted.certificates, 1, "only bob's certificate is brought");
  assert.equal(outcome.plan.counts.certificates.removedHere, 2);
  const left = new Map(outcome.plan.removedHere.map((removed) => [removed.record, removed]));
  assert.match(
    left.get(mallorys.commonName)?.reason ?? '',
    /^eduVPN refuses it at connect: its user mallory holds none of profile employees's aclPermissionList \[staff\]/,
  );
  assert.equal(left.get(mallorys.commonName)?.kind, 'certificates');
  assert.match(left.get(carols.commonName)?.reason ?? '', /its user carol holds none of .*aclPermissionList/);

  assert.deepEqual(
    (await certificatesWithNames(ctx.db, [mallorys.commonName, bobs.commonName, carols.commonName])).map(
      (certificate) => certificate.userId,
    ),
    ['bob'],
  );
  assert.equal(await connects(mallorys.commonName), false, "mallory's file does not connect here either");
  assert.equal(await connects(carols.commonName), false);
  assert.equal(await connects(bobs.commonName), true, 'bob holds staff: his keeps working');
  assert.equal(
    (await peersWithKeys(ctx.db, [mallorysPeer.publicKey])).length,
    1,
    "mallory's WireGuard peer is brought",
  );

  // mallory gets "staff" back in eduVPN before a later run: the import left her certificate, and
  // leaves it again (a new one comes with `create`).
  records.users[0] = eduVpnUser('mallory', { permissionList: '["staff"]' });
  const again = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(again.plan.conflicts, []);
  assert.deepEqual(Object.values(again.applied?.inserted ?? {}), [0, 0, 0, 0, 0, 0], 'a run again brings nothing');
  assert.match(
    again.plan.removedHere.find((removed) => removed.record === mallorys.commonName)?.reason ?? '',
    /^left by an import at \S+ because eduVPN refused it at connect \(its user held none of its profile's aclPermissionList\): it stays left$/,
  );
  assert.equal(await connects(mallorys.commonName), false);
});
