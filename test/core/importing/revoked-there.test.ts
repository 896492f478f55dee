// The eduVPN import run again after eduVPN revoked something an earlier run brought (both
// databases in the suite): going back to eduVPN for a while and moving again, or a run while
// eduVPN still served. A configuration eduVPN deleted since, or lost with its destroyed user, is
// valid here still; the run must not leave it so in silence, or a file revoked there connects
// here. Each is a conflict naming it, until it is revoked here too.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { importEduVpn, planEduVpnImport, type ImportContext } from '../../../src/core/importing/index.js';
import { certificatesWithNames } from '../../../src/storage/certificates.js';
import { peersWithKeys } from '../../../src/storage/wg-peers.js';
import {
  eduVpnCertificate,
  eduVpnPeer,
  eduVpnUser,
  emptyRecords,
  inMemoryDeployment,
} from '../../support/in-memory-eduvpn.js';
import { startImportPortal } from '../../support/import-portal.js';
import type { TestPortal } from '../../support/test-portal.js';

let portal: TestPortal;
let ctx: ImportContext;

// A portal of its own for each story: a run's deployment is all eduVPN has then.
beforeEach(async () => {
  portal = await startImportPortal();
  ctx = portal.portal.ctx;
});
afterEach(() => portal.close());

test('a configuration eduVPN revoked after an import brought it stops the next import until it is revoked here too', async () => {
  // The first move: alice with two WireGuard files and an OpenVPN file, bob with one.
  const records = emptyRecords();
  records.users = [eduVpnUser('alice'), eduVpnUser('bob')];
  const [stolenLaptop, desktop] = [eduVpnPeer('alice', 0), eduVpnPeer('alice', 1)];
  const bobsPhone = eduVpnPeer('bob', 2);
  const alicesOpenVpn = eduVpnCertificate('alice');
  records.wireGuardPeers = [stolenLaptop, desktop, bobsPhone];
  records.certificates = [alicesOpenVpn];
  const first = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(first.plan.conflicts, []);

  // Back on eduVPN for a while: alice's laptop was stolen and her OpenVPN file revoked there,
  // bob left and was destroyed there (his configurations with him).
  const later = emptyRecords();
  later.users = [eduVpnUser('alice')];
  later.wireGuardPeers = [desktop];

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(later));
  const conflicting = plan.conflicts.map((conflict) => conflict.record).sort();
  assert.deepEqual(
    conflicting,
    [stolenLaptop.publicKey, bobsPhone.publicKey, alicesOpenVpn.commonName].sort(),
    'each configuration eduVPN revoked since is a conflict',
  );
  for (const conflict of plan.conflicts) assert.match(conflict.reason, /no longer in eduVPN: revoked there since/);
  assert.equal(plan.counts.wireGuardPeers.conflicting, 2);
  assert.equal(plan.counts.certificates.conflicting, 1);
  const refused = await importEduVpn(ctx, inMemoryDeployment(later));
  assert.equal(refused.applied, null, 'nothing is written while they are valid here');

  // Revoked here too: the import goes on, and brings none of them back.
  assert.notEqual(await portal.admin.deleteConnection('alice', stolenLaptop.publicKey), null);
  assert.notEqual(await portal.admin.deleteConnection('alice', alicesOpenVpn.commonName), null);
  assert.notEqual(await portal.admin.destroy('bob'), null);
  const done = await importEduVpn(ctx, inMemoryDeployment(later));
  assert.deepEqual(done.plan.conflicts, []);
  assert.notEqual(done.applied, null);
  assert.deepEqual(
    (await peersWithKeys(ctx.db, [stolenLaptop.publicKey, bobsPhone.publicKey, desktop.publicKey])).map(
      (peer) => peer.publicKey,
    ),
    [desktop.publicKey],
  );
  assert.deepEqual(await certificatesWithNames(ctx.db, [alicesOpenVpn.commonName]), []);
});

test('a configuration made here, never brought by an import, is no conflict for not being in eduVPN', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('carol')];
  records.wireGuardPeers = [eduVpnPeer('carol', 10)];
  assert.deepEqual((await importEduVpn(ctx, inMemoryDeployment(records))).plan.conflicts, []);
  await portal.admin.create({ user_id: 'carol', profile_id: 'employees' });

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  assert.deepEqual(plan.conflicts, []);
});
