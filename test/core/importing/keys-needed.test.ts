// The keys the configurations to bring connect with: a profile's tls-crypt key, the OpenVPN CA,
// a node's WireGuard key. One that neither eduVPN's files bring nor this portal has (its keys
// folder not copied, another folder named) is a conflict: the portal would make a new key on
// first use, and none of those files would connect after the move. A node's key given for a node
// nothing connects to is told as not needed and not written; one without eduVPN's public key file
// to check it against is brought, and told as unchecked.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { importEduVpn, planEduVpnImport, type ImportContext } from '../../../src/core/importing/index.js';
import { generateTlsCryptKey } from '../../../src/openvpn/tls-crypt.js';
import type { EduVpnKeys, EduVpnWireGuardPeer } from '../../../src/eduvpn/deployment.js';
import { asNodeNumber, asProfileId, asWireGuardKey } from '../../../src/shared/ids.js';
import { certificatesWithNames } from '../../../src/storage/certificates.js';
import { peersWithKeys } from '../../../src/storage/wg-peers.js';
import { generateWireGuardKeyPair, wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import {
  eduVpnCertificate,
  eduVpnPeer,
  eduVpnUser,
  emptyRecords,
  inMemoryDeployment,
  NO_KEYS,
  type EduVpnRecords,
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
    {
      profileId: 'branch',
      displayName: 'Branch',
      hostName: 'branch.example.org',
      wRangeFour: '10.49.0.0/24',
      wRangeSix: 'fd49::/64',
      onNode: [2],
      nodeUrl: [UNREACHABLE_NODE],
    },
  ]);
  ctx = portal.portal.ctx;
  // A portal whose keys folder has the nodes' WireGuard keys only because generate-secrets ran.
  rmSync(ctx.keys.wireGuardKeyPath(asNodeNumber(1)));
  rmSync(ctx.keys.wireGuardKeyPath(asNodeNumber(2)));
});
after(() => portal.close());

// Dee's configurations, which the first story brings: eduVPN still has them at the later runs.
const openVpn = eduVpnCertificate('dee', { profileId: asProfileId('staff') });
const wireGuard = eduVpnPeer('dee', 0, {
  profileId: asProfileId('remote'),
  nodeNumber: asNodeNumber(1),
  ipFour: '10.48.0.2',
  ipSix: 'fd48::2',
});

function deeRecords(): EduVpnRecords {
  const records = emptyRecords();
  records.users = [eduVpnUser('dee')];
  records.certificates = [openVpn];
  records.wireGuardPeers = [wireGuard];
  return records;
}

test('configurations whose tls-crypt or WireGuard key neither eduVPN’s files nor this portal have are conflicts, and nothing is written', async () => {
  const records = deeRecords();

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

// Erin's configuration of profile branch, on node 2, which the second story brings.
const onNode2 = eduVpnPeer('erin', 0, {
  profileId: asProfileId('branch'),
  nodeNumber: asNodeNumber(2),
  ipFour: '10.49.0.2',
  ipSix: 'fd49::2',
});

/** Dee as the first story brought her, erin with her configuration on node 2, and `more`. */
function branchDeployment(keys: EduVpnKeys, more: readonly EduVpnWireGuardPeer[] = []) {
  const records = deeRecords();
  records.users = [...records.users, eduVpnUser('erin'), ...more.map((peer) => eduVpnUser(peer.userId))];
  records.wireGuardPeers = [...records.wireGuardPeers, onNode2, ...more];
  return inMemoryDeployment(records, { keys });
}

test('a public key eduVPN keeps for a node nothing brought connects to is told as not needed, not a conflict; one the brought configurations name still needs its private key', async () => {
  const node2 = generateWireGuardKeyPair();
  // Node 7 was retired in eduVPN: its wireguard.7.public.key stayed, no configuration names it.
  const retired = generateWireGuardKeyPair();
  const keys: EduVpnKeys = {
    ...NO_KEYS,
    wireGuardPublicKeys: new Map([
      [asNodeNumber(2), asWireGuardKey(node2.publicKey)],
      [asNodeNumber(7), asWireGuardKey(retired.publicKey)],
    ]),
  };

  const refused = await importEduVpn(ctx, branchDeployment(keys));
  assert.equal(refused.applied, null);
  assert.deepEqual(
    refused.plan.conflicts.map((conflict) => [conflict.kind, conflict.record]),
    [['keys', ctx.keys.wireGuardKeyPath(asNodeNumber(2))]],
  );
  assert.match(
    refused.plan.conflicts[0]?.reason ?? '',
    /^node 2: 1 WireGuard configurations to bring name public key .*--node-wireguard-key 2=FILE/,
  );
  assert.deepEqual(
    refused.plan.keysNotNeeded.map((key) => key.name),
    ['node 7 WireGuard public key'],
  );
  assert.match(refused.plan.keysNotNeeded[0]?.reason ?? '', /no configuration to bring connects to node 7/);

  // Node 2's private key given, node 7's not: the import goes through, and writes nothing for node 7.
  const withNode2 = { ...keys, wireGuardPrivateKeys: new Map([[asNodeNumber(2), asWireGuardKey(node2.privateKey)]]) };
  const done = await importEduVpn(ctx, branchDeployment(withNode2));
  assert.deepEqual(done.plan.conflicts, []);
  assert.equal(done.applied?.keyFiles, 1);
  assert.equal(done.applied?.inserted.wireGuardPeers, 1);
  assert.equal(ctx.keys.wireGuardPublicKey(asNodeNumber(2)), node2.publicKey);
  assert.equal(existsSync(ctx.keys.wireGuardKeyPath(asNodeNumber(7))), false);
});

test('a node key this portal holds that is not the one eduVPN’s files name is a conflict naming the key here, and what to do', async () => {
  // The earlier stories brought dee's and erin's configurations with this portal's node 1 key;
  // eduVPN's files for node 1 name another key, and fay's new configuration connects with it.
  const eduVpnNode1 = generateWireGuardKeyPair();
  const keys: EduVpnKeys = {
    ...NO_KEYS,
    wireGuardPublicKeys: new Map([[asNodeNumber(1), asWireGuardKey(eduVpnNode1.publicKey)]]),
  };
  const deployment = branchDeployment(keys, [
    eduVpnPeer('fay', 0, {
      profileId: asProfileId('remote'),
      nodeNumber: asNodeNumber(1),
      ipFour: '10.48.0.3',
      ipSix: 'fd48::3',
    }),
  ]);
  const keyHere = ctx.keys.wireGuardPublicKey(asNodeNumber(1));

  const refused = await importEduVpn(ctx, deployment);
  assert.equal(refused.applied, null);
  assert.deepEqual(
    refused.plan.conflicts.map((conflict) => [conflict.kind, conflict.record]),
    [['keys', ctx.keys.wireGuardKeyPath(asNodeNumber(1))]],
  );
  assert.equal(
    refused.plan.conflicts[0]?.reason,
    `node 1: 1 WireGuard configurations to bring name public key ${eduVpnNode1.publicKey} (eduVPN's wireguard.1.public.key), but this portal's key for node 1 is another one (public key ${keyHere}; 1 WireGuard configurations here use it): those files would stop working with it; give the node's private key (--node-wireguard-key 1=FILE, copied from the node's /etc/vpn-server-node/keys/wireguard.key), and move this portal's key file away if nothing here needs it`,
  );
  assert.equal(ctx.keys.wireGuardPublicKey(asNodeNumber(1)), keyHere, 'the key here was kept');
});

// Gus's configuration on node 2, which the story of the unchecked key brings.
const gus = eduVpnPeer('gus', 0, {
  profileId: asProfileId('branch'),
  nodeNumber: asNodeNumber(2),
  ipFour: '10.49.0.3',
  ipSix: 'fd49::3',
});

test('a node key given without eduVPN’s public key file to check it against is brought with a warning that it went unchecked', async () => {
  // eduVPN's data folder was copied without wireguard.2.public.key; gus's new configuration is on node 2.
  const keys: EduVpnKeys = {
    ...NO_KEYS,
    wireGuardPrivateKeys: new Map([[asNodeNumber(2), nodeKeyHere(2)]]),
  };

  const done = await importEduVpn(ctx, branchDeployment(keys, [gus]));
  assert.deepEqual(done.plan.conflicts, []);
  assert.deepEqual(done.plan.keyWarnings, [
    {
      name: 'node 2 WireGuard private key',
      reason:
        "eduVPN's files hold no wireguard.2.public.key, so the key given was not checked against the public key the WireGuard files issued for node 2 name (only that it is no other node's); keep /var/lib/vpn-user-portal/keys/wireguard.2.public.key in the copy of eduVPN's data folder and run the dry run again to have it checked",
    },
  ]);
  assert.equal(done.applied?.inserted.wireGuardPeers, 1);

  // With the public key file, the same key is checked, and nothing is told.
  const checked = { ...keys, wireGuardPublicKeys: new Map([[asNodeNumber(2), wireGuardPublicKey(nodeKeyHere(2))]]) };
  const again = await planEduVpnImport(ctx, branchDeployment(checked, [gus]));
  assert.deepEqual(again.conflicts, []);
  assert.deepEqual(again.keyWarnings, []);
});

test('a node key given for a node nothing brought or here connects to is told as not needed, and not written', async () => {
  // Node 7 was retired in eduVPN, and its wireguard.key was given all the same; node 2's key is here already.
  const retired = generateWireGuardKeyPair();
  const keys: EduVpnKeys = {
    ...NO_KEYS,
    wireGuardPrivateKeys: new Map([
      [asNodeNumber(2), nodeKeyHere(2)],
      [asNodeNumber(7), asWireGuardKey(retired.privateKey)],
    ]),
    wireGuardPublicKeys: new Map([
      [asNodeNumber(2), wireGuardPublicKey(nodeKeyHere(2))],
      [asNodeNumber(7), asWireGuardKey(retired.publicKey)],
    ]),
  };

  const done = await importEduVpn(ctx, branchDeployment(keys, [gus]));
  assert.deepEqual(done.plan.conflicts, []);
  assert.deepEqual(
    done.plan.keyFiles.map((file) => [file.name, file.state]),
    [['node 2 WireGuard private key', 'same']],
  );
  assert.deepEqual(done.plan.keysNotNeeded, [
    {
      name: 'node 7 WireGuard private key',
      reason:
        'given with --node-wireguard-key 7=FILE, but no configuration to bring connects to node 7 and none here does (a node eduVPN no longer uses, or none of its configurations is brought): it is not needed, and nothing is written for node 7',
    },
  ]);
  assert.equal(done.applied?.keyFiles, 0);
  assert.equal(existsSync(ctx.keys.wireGuardKeyPath(asNodeNumber(7))), false);
});

/** The WireGuard private key this portal holds for `node`. */
function nodeKeyHere(node: number) {
  return asWireGuardKey(readFileSync(ctx.keys.wireGuardKeyPath(asNodeNumber(node)), 'utf8').trim());
}
