// The keys the configurations to bring connect with: a profile's tls-crypt key, the OpenVPN CA,
// a node's WireGuard key. One that neither eduVPN's files bring nor this portal has (its keys
// folder not copied, another folder named) is a conflict: the portal would make a new key on
// first use, and none of those files would connect after the move.
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { importEduVpn, type ImportContext } from '../../../src/core/importing/index.js';
import { generateTlsCryptKey } from '../../../src/openvpn/tls-crypt.js';
import { asNodeNumber, asProfileId, asWireGuardKey } from '../../../src/shared/ids.js';
import { certificatesWithNames } from '../../../src/storage/certificates.js';
import { peersWithKeys } from '../../../src/storage/wg-peers.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import {
  eduVpnCertificate,
  eduVpnPeer,
  eduVpnUser,
  emptyRecords,
  inMemoryDeployment,
  NO_KEYS,
} from '../../support/in-memory-eduvpn.js';
import { startImportPortal } from '../../support/import-portal.js';
import { UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';

let portal: TestPortal;
let ctx: ImportContext;

before(async () => {
  portal = await startImportPortal([
    {
      profileId: 'staff',
      displayName: 'Staff',
      hostName: 'staff.example.org',
      oRangeFour: '10.47.0.0/24',
      oRangeSix: 'fd47::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
    {
      profileId: 'remote',
      displayName: 'Remote',
      hostName: 'remote.example.org',
      wRangeFour: '10.48.0.0/24',
      wRangeSix: 'fd48::/64',
      onNode: [1],
      nodeUrl: [UNREACHABLE_NODE],
    },
  ]);
  ctx = portal.portal.ctx;
  // A portal whose keys folder has node 1's WireGuard key only because generate-secrets ran.
  rmSync(ctx.keys.wireGuardKeyPath(asNodeNumber(1)));
});
after(() => portal.close());

test('configurations whose tls-crypt or WireGuard key neither eduVPN’s files nor this portal have are conflicts, and nothing is written', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('dee')];
  const openVpn = eduVpnCertificate('dee', { profileId: asProfileId('staff') });
  const wireGuard = eduVpnPeer('dee', 0, {
    profileId: asProfileId('remote'),
    nodeNumber: asNodeNumber(1),
    ipFour: '10.48.0.2',
    ipSix: 'fd48::2',
  });
  records.certificates = [openVpn];
  records.wireGuardPeers = [wireGuard];

  const refused = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.equal(refused.applied, null);
  const conflicts = refused.plan.conflicts.filter((conflict) => conflict.kind === 'keys');
  assert.deepEqual(
    conflicts.map((conflict) => conflict.record),
    [ctx.openVpnKeys.tlsCryptKeyPath('staff'), ctx.keys.wireGuardKeyPath(asNodeNumber(1))],
  );
  assert.match(conflicts[0]?.reason ?? '', /1 OpenVPN configurations of profile staff need its tls-crypt key/);
  assert.match(conflicts[1]?.reason ?? '', /1 WireGuard configurations of node 1 need its WireGuard key/);
  assert.equal(existsSync(ctx.openVpnKeys.tlsCryptKeyPath('staff')), false);
  assert.deepEqual(await certificatesWithNames(ctx.db, [openVpn.commonName]), []);
  assert.deepEqual(await peersWithKeys(ctx.db, [wireGuard.publicKey]), []);

  // With eduVPN's keys, the same deployment comes over, keys first.
  const keys = {
    ...NO_KEYS,
    tlsCryptKeys: new Map([[asProfileId('staff'), generateTlsCryptKey()]]),
    wireGuardPrivateKeys: new Map([[asNodeNumber(1), asWireGuardKey(generateWireGuardKeyPair().privateKey)]]),
  };
  const done = await importEduVpn(ctx, inMemoryDeployment(records, { keys }));
  assert.deepEqual(done.plan.conflicts, []);
  assert.equal(done.applied?.keyFiles, 2);
  assert.equal(done.applied?.inserted.certificates, 1);
  assert.equal(done.applied?.inserted.wireGuardPeers, 1);
});
