// The eduVPN server's secrets the import takes over, so that everything issued or set up with
// them keeps working: the Admin API secret (scripts), the node secrets (the nodes' agents), each
// node's WireGuard private key (its public key is in every WireGuard file), the OpenVPN CA (it
// signed every client certificate) and each profile's tls-crypt key (in every OpenVPN file).
// A file here that holds another key is never replaced: it is a conflict, told with what here
// already depends on it. A node's key that nothing brought or here connects with is not written.
import { existsSync } from 'node:fs';
import type { EduVpnKeys } from '../../eduvpn/deployment.js';
import { keyFileState, type CreatedOrKept } from '../../keys/key-store.js';
import { CertificateAuthority } from '../../openvpn/certificate-authority.js';
import { messageOf } from '../../shared/error-message.js';
import type { NodeNumber, WireGuardKey } from '../../shared/ids.js';
import { countCertificatesByProfileAndNode } from '../../storage/certificates.js';
import { countPeersByProfileAndNode } from '../../storage/wg-peers.js';
import { isWireGuardKey, wireGuardPublicKey } from '../../wireguard/keys.js';
import type { ImportFacts } from './configurations.js';
import type { ConflictList, ImportConflict, ImportContext, KeyNotNeeded, PlannedKeyFile } from './plan-types.js';

/** A key file to bring, and how to write it. */
export interface KeyAdoption extends PlannedKeyFile {
  adopt(): Promise<CreatedOrKept>;
  /** Why the key could not be checked against eduVPN's issued files, to be told; none when it was. */
  readonly unchecked?: string;
  /** The node, of a node's WireGuard private key. */
  readonly node?: NodeNumber;
}

/** What here depends on a key, per key: how many configurations, for the conflict's message. */
export interface KeyDependents {
  readonly peersOnNode: (node: NodeNumber) => number;
  readonly certificates: (profileId?: string) => number;
}

/** Every key file the deployment brings, compared with this portal's; a different one is a conflict. */
export async function planKeyFiles(
  ctx: ImportContext,
  keys: EduVpnKeys,
  dependents: KeyDependents,
  conflicts: ConflictList,
): Promise<KeyAdoption[]> {
  const planned: KeyAdoption[] = [];
  const add = (adoption: KeyAdoption, dependentsText: string): void => {
    planned.push(adoption);
    if (adoption.state === 'differs')
      conflicts.add({
        kind: 'keys',
        record: adoption.path,
        reason: `${adoption.name} here is another key than eduVPN's; it is never replaced (${dependentsText}); move it away if nothing needs it`,
      });
  };
  const store = ctx.keys;
  if (keys.adminApiKey !== null) {
    const content = keys.adminApiKey;
    add(
      secretFile('Admin API secret', store.adminApiKeyPath, content, () => store.adoptAdminApiKey(content)),
      'scripts may use it',
    );
  }
  for (const [node, content] of keys.nodeKeys)
    add(
      secretFile(`node ${node} secret`, store.nodeKeyPath(node), content, () => store.adoptNodeKey(node, content)),
      `the agent of node ${node} may use it`,
    );
  for (const adoption of planWireGuardKeys(ctx, keys, conflicts))
    add(adoption, `${dependents.peersOnNode(adoption.node)} WireGuard configurations here use it`);
  if (keys.openVpnCa !== null) {
    const adoption = await planCa(ctx, keys.openVpnCa, conflicts);
    if (adoption !== null) add(adoption, `${dependents.certificates()} OpenVPN configurations here were issued by it`);
  }
  for (const [profileId, content] of keys.tlsCryptKeys) {
    const openVpnKeys = ctx.openVpnKeys;
    add(
      {
        name: `tls-crypt key of profile ${profileId}`,
        path: openVpnKeys.tlsCryptKeyPath(profileId),
        state: openVpnKeys.tlsCryptKeyState(profileId, content),
        adopt: async () => openVpnKeys.adoptTlsCryptKey(profileId, content),
      },
      `${dependents.certificates(profileId)} OpenVPN configurations of ${profileId} here use it`,
    );
  }
  return planned;
}

/**
 * A key the configurations to bring need that neither eduVPN's files bring nor this portal has
 * (eduVPN's keys folder not copied, or another folder named): a conflict, since this portal would
 * make a new key on first use and none of those files would connect. A key here is taken as
 * theirs: whether it is, only eduVPN's file could tell. A node's public key eduVPN's files name
 * without its private key is such a conflict only when configurations to bring connect to that
 * node: eduVPN keeps the file of a node it retired, and nothing of that node is brought. Those
 * are returned, to be told.
 */
export function findKeysNeededAndMissing(
  ctx: ImportContext,
  keys: EduVpnKeys,
  facts: Pick<ImportFacts, 'openVpnPerProfile' | 'wireGuardPerNode'>,
  dependents: KeyDependents,
  conflicts: ConflictList,
): KeyNotNeeded[] {
  const missing = (path: string, reason: string) =>
    conflicts.add({ kind: 'keys', record: path, reason: `${reason}, and it is neither in eduVPN's files nor here` });
  const openVpn = [...facts.openVpnPerProfile.values()].reduce((sum, count) => sum + count, 0);
  if (openVpn > 0 && keys.openVpnCa === null && !existsSync(ctx.openVpnKeys.caCertificatePath))
    missing(
      ctx.openVpnKeys.caCertificatePath,
      `${openVpn} OpenVPN configurations need eduVPN's OpenVPN CA (/etc/vpn-user-portal/keys/ca/ca.crt and ca.key)`,
    );
  for (const [profileId, count] of facts.openVpnPerProfile) {
    const path = ctx.openVpnKeys.tlsCryptKeyPath(profileId);
    if (!keys.tlsCryptKeys.has(profileId) && !existsSync(path))
      missing(
        path,
        `${count} OpenVPN configurations of profile ${profileId} need its tls-crypt key (/var/lib/vpn-user-portal/keys/tls-crypt-${profileId}.key)`,
      );
  }
  for (const [node, count] of facts.wireGuardPerNode) {
    const path = ctx.keys.wireGuardKeyPath(node);
    if (keys.wireGuardPrivateKeys.has(node)) continue;
    const named = keys.wireGuardPublicKeys.get(node);
    if (named === undefined) {
      if (!existsSync(path))
        missing(
          path,
          `${count} WireGuard configurations of node ${node} need its WireGuard key (${nodeKeyOption(node)})`,
        );
      continue;
    }
    const here = ctx.keys.wireGuardPublicKey(node);
    if (here !== named) conflicts.add(nodePrivateKeyNotGiven(ctx, node, count, named, here, dependents));
  }
  const notNeeded: KeyNotNeeded[] = [];
  for (const [node, named] of keys.wireGuardPublicKeys) {
    if ((facts.wireGuardPerNode.get(node) ?? 0) > 0 || keys.wireGuardPrivateKeys.has(node)) continue;
    if (ctx.keys.wireGuardPublicKey(node) === named) continue;
    notNeeded.push({
      name: `node ${node} WireGuard public key`,
      reason: `eduVPN's wireguard.${node}.public.key names ${named}, but no configuration to bring connects to node ${node} (a node eduVPN no longer uses, or none of its configurations is brought): its private key is not needed, and nothing is written for node ${node}`,
    });
  }
  return notNeeded;
}

/**
 * The key files to write, without the node WireGuard keys given for a node no configuration to
 * bring connects to and none here is on (a node eduVPN no longer uses, or none of whose
 * configurations is brought): such a key is not written, and is returned to be told, so that no
 * key file of a node this portal does not serve is left in its keys folder. One here already
 * stays, as does one that differs from the key here (a conflict already).
 */
export function setAsideNodeKeysNotNeeded(
  adoptions: readonly KeyAdoption[],
  facts: Pick<ImportFacts, 'wireGuardPerNode'>,
  dependents: KeyDependents,
): { readonly adoptions: KeyAdoption[]; readonly notNeeded: KeyNotNeeded[] } {
  const notNeeded: KeyNotNeeded[] = [];
  const kept = adoptions.filter(({ node, name, state }) => {
    if (node === undefined || state !== 'missing') return true;
    if ((facts.wireGuardPerNode.get(node) ?? 0) > 0 || dependents.peersOnNode(node) > 0) return true;
    notNeeded.push({
      name,
      reason: `given with --node-wireguard-key ${node}=FILE, but no configuration to bring connects to node ${node} and none here does (a node eduVPN no longer uses, or none of its configurations is brought): it is not needed, and nothing is written for node ${node}`,
    });
    return false;
  });
  return { adoptions: kept, notNeeded };
}

function nodeKeyOption(node: NodeNumber): string {
  return `--node-wireguard-key ${node}=FILE, copied from the node's /etc/vpn-server-node/keys/wireguard.key`;
}

/**
 * Configurations to bring name node `node`'s public key, and its private key was not given. With
 * another key of this portal's for the node, that key would be kept and every file eduVPN issued
 * for the node would stop connecting: the conflict names it, and what here uses it.
 */
function nodePrivateKeyNotGiven(
  ctx: ImportContext,
  node: NodeNumber,
  count: number,
  named: string,
  here: string | null,
  dependents: KeyDependents,
): ImportConflict {
  const needed = `node ${node}: ${count} WireGuard configurations to bring name public key ${named} (eduVPN's wireguard.${node}.public.key)`;
  const record = ctx.keys.wireGuardKeyPath(node);
  if (here === null)
    return { kind: 'keys', record, reason: `${needed}, and its private key was not given (${nodeKeyOption(node)})` };
  const usedHere = dependents.peersOnNode(node);
  return {
    kind: 'keys',
    record,
    reason: `${needed}, but this portal's key for node ${node} is another one (public key ${here}; ${usedHere} WireGuard configurations here use it): those files would stop working with it; give the node's private key (${nodeKeyOption(node)}), and move this portal's key file away if nothing here needs it`,
  };
}

/** Writes the key files that are missing here (the plan had no conflict). */
export async function adoptKeyFiles(planned: readonly KeyAdoption[]): Promise<number> {
  let written = 0;
  for (const adoption of planned) if (adoption.state === 'missing' && (await adoption.adopt()).created) written++;
  return written;
}

function secretFile(name: string, path: string, content: string, adopt: () => CreatedOrKept): KeyAdoption {
  return { name, path, state: keyFileState(path, content), adopt: async () => adopt() };
}

/** The node whose wireguard.N.public.key eduVPN's files name `key` with, if any. */
function nodeNamingPublicKey(keys: EduVpnKeys, key: string): NodeNumber | undefined {
  return [...keys.wireGuardPublicKeys].find(([, named]) => named === key)?.[0];
}

/** Each node's WireGuard private key, checked against the public key eduVPN's files name. */
function planWireGuardKeys(
  ctx: ImportContext,
  keys: EduVpnKeys,
  conflicts: ConflictList,
): (KeyAdoption & { readonly node: NodeNumber })[] {
  const planned: (KeyAdoption & { readonly node: NodeNumber; readonly privateKey: string })[] = [];
  const store = ctx.keys;
  for (const [node, privateKey] of keys.wireGuardPrivateKeys) {
    const path = store.wireGuardKeyPath(node);
    const named = keys.wireGuardPublicKeys.get(node);
    if (!isWireGuardKey(privateKey)) {
      conflicts.add({
        kind: 'keys',
        record: path,
        reason: `node ${node}: the WireGuard private key given is not one (Base64 of 32 bytes, as wg genkey writes it)`,
      });
      continue;
    }
    const publicKey = wireGuardPublicKey(privateKey);
    // Without the node's own wireguard.N.public.key nothing of eduVPN's records the key its
    // files name (wg_peers keeps none): a key given for the wrong node, or a public key file
    // given as the private key, is what can still be told.
    const publicKeyOf = nodeNamingPublicKey(keys, privateKey);
    if (publicKeyOf !== undefined) {
      conflicts.add({
        kind: 'keys',
        record: path,
        reason: `node ${node}: the WireGuard private key given is eduVPN's public key of node ${publicKeyOf} (wireguard.${publicKeyOf}.public.key), not a private key; give the node's /etc/vpn-server-node/keys/wireguard.key`,
      });
      continue;
    }
    const otherNode = named === undefined ? nodeNamingPublicKey(keys, publicKey) : undefined;
    if (otherNode !== undefined) {
      conflicts.add({
        kind: 'keys',
        record: path,
        reason: `node ${node}: the WireGuard private key given is node ${otherNode}'s (eduVPN's wireguard.${otherNode}.public.key names its public key ${publicKey}); the WireGuard files issued for node ${node} would not connect`,
      });
      continue;
    }
    if (named !== undefined && named !== publicKey) {
      conflicts.add({
        kind: 'keys',
        record: path,
        reason: `node ${node}: the WireGuard private key given belongs to public key ${publicKey}, but eduVPN's files name ${named}`,
      });
      continue;
    }
    const adopt = async () => store.adoptWireGuardKey(node, privateKey as WireGuardKey);
    planned.push({
      name: `node ${node} WireGuard private key`,
      path,
      state: keyFileState(path, privateKey),
      adopt,
      node,
      privateKey,
      ...(named === undefined ? { unchecked: uncheckedNodeKey(node) } : {}),
    });
  }
  // A public key named without its private key matters only if configurations to bring connect
  // with it: findKeysNeededAndMissing tells, once the configurations are counted.
  return withoutSharedKeys(planned, conflicts).map(({ privateKey: _, ...adoption }) => adoption);
}

/**
 * The node keys of `planned` but those given unchecked for another node too. Each node has a
 * key of its own, so one given for two nodes neither of whose wireguard.N.public.key is in
 * eduVPN's files (the same file named twice, or a copy) is the wrong key for one of them, whose
 * WireGuard files would not connect: a conflict for each, since which one cannot be told. A key
 * eduVPN's own public key file confirms for its node is brought, though another node share it
 * (a node cloned with its key: eduVPN's files name the same public key for both).
 */
function withoutSharedKeys<
  Adoption extends {
    readonly node: NodeNumber;
    readonly privateKey: string;
    readonly path: string;
    readonly unchecked?: string;
  },
>(planned: readonly Adoption[], conflicts: ConflictList): Adoption[] {
  return planned.filter((adoption) => {
    if (adoption.unchecked === undefined) return true;
    const others = planned.filter(
      (other) =>
        other.node !== adoption.node && other.unchecked !== undefined && other.privateKey === adoption.privateKey,
    );
    if (others.length === 0) return true;
    const nodes = others.map((other) => `node ${other.node}`).join(', ');
    conflicts.add({
      kind: 'keys',
      record: adoption.path,
      reason: `node ${adoption.node}: the WireGuard private key given was also given for ${nodes}; each node has a key of its own, so the WireGuard files issued for one of them would not connect: give each node's own /etc/vpn-server-node/keys/wireguard.key`,
    });
    return false;
  });
}

/** Why a node's private key given without eduVPN's wireguard.N.public.key went unchecked, and how to have it checked. */
function uncheckedNodeKey(node: NodeNumber): string {
  return `eduVPN's files hold no wireguard.${node}.public.key, so the key given was not checked against the public key the WireGuard files issued for node ${node} name (only that it is no other node's); keep /var/lib/vpn-user-portal/keys/wireguard.${node}.public.key in the copy of eduVPN's data folder and run the dry run again to have it checked`;
}

async function planCa(
  ctx: ImportContext,
  ca: NonNullable<EduVpnKeys['openVpnCa']>,
  conflicts: ConflictList,
): Promise<KeyAdoption | null> {
  const openVpnKeys = ctx.openVpnKeys;
  try {
    await CertificateAuthority.load(ca.certificatePem, ca.privateKeyPem);
  } catch (error) {
    conflicts.add({
      kind: 'keys',
      record: openVpnKeys.caCertificatePath,
      reason: `eduVPN's OpenVPN CA cannot be used: ${messageOf(error)}`,
    });
    return null;
  }
  return {
    name: 'OpenVPN CA',
    path: openVpnKeys.caCertificatePath,
    state: openVpnKeys.caState(ca.certificatePem, ca.privateKeyPem),
    adopt: () => openVpnKeys.adoptCa(ca.certificatePem, ca.privateKeyPem),
  };
}

/**
 * What here depends on each key, counted once per plan: planning writes nothing, so the counts
 * hold for all of it.
 */
export async function countKeyDependents(ctx: ImportContext): Promise<KeyDependents> {
  const peers = await countPeersByProfileAndNode(ctx.db);
  const certificates = await countCertificatesByProfileAndNode(ctx.db);
  return {
    peersOnNode: (node) => peers.filter((row) => row.nodeNumber === node).reduce((sum, row) => sum + row.count, 0),
    certificates: (profileId) =>
      certificates
        .filter((row) => profileId === undefined || row.profileId === profileId)
        .reduce((sum, row) => sum + row.count, 0),
  };
}
