// The eduVPN configurations, page by page, against this portal: each WireGuard peer and OpenVPN
// certificate is brought, found here already (the same key, user, profile, node and addresses),
// left because it expired, left because an earlier import brought it and it was revoked here
// since (or its user was destroyed here), left because eduVPN refuses it at connect (an OpenVPN
// certificate whose user holds none of its profile's `aclPermissionList`: ./acl.ts), or a
// conflict naming it — its user is not in eduVPN's users, its profile, node or protocol is not
// here, its addresses are not in this portal's pool for that profile and node, or its key,
// common name or addresses belong to another configuration here.
import type { EduVpnCertificate, EduVpnUserOwned, EduVpnWireGuardPeer } from '../../eduvpn/deployment.js';
import { findProfile, type PortalConfig, type ProfileNode } from '../../config/portal-config.js';
import type { ConnectionId, NodeNumber, ProfileId, UserId, VpnProto } from '../../shared/ids.js';
import type { Db } from '../../storage/database.js';
import { certificatesWithNames, type OpenVpnCertificate } from '../../storage/certificates.js';
import type { PoolKey } from '../../storage/ip-pools.js';
import { peersAtAddresses, peersWithKeys, type NewPeer } from '../../storage/wg-peers.js';
import { clientAddressesAt, poolIndexOf } from '../../wireguard/address-pool.js';
import type { ImportedRecord } from '../../storage/imported-records.js';
import { MAX_USER_ID_LENGTH } from '../../protocol/admin-api-params.js';
import { aclRefusal, type AclPermissions } from './acl.js';
import type { ImportConflict, RemovedHere } from './plan-types.js';
import { configurationsRemovedHere } from './removed-here.js';

/** What the configurations tell about the other kinds, gathered while they are checked. */
export interface ImportFacts {
  /** ATOM: configurations expiring by then are not brought. */
  readonly now: string;
  /** ATOM: a configuration expiring by then needs no `configuration.expiring` any more. */
  readonly warningHorizon: string;
  /** Each user's earliest configuration (expired ones too): when the user was made. */
  readonly earliestConfiguration: Map<UserId, string>;
  /**
   * Authorizations an unexpired configuration names (brought even when expired themselves), each
   * with the latest expiry of those configurations: until then a later run could bring it again.
   */
  readonly namedAuthorizations: Map<string, string>;
  /**
   * Users found disabled here, but those only the import disabled (by the users' check, before
   * the authorizations'): theirs are left.
   */
  readonly usersDisabledHere: Set<UserId>;
  /**
   * Users disabled here (but those only the import disabled), read before the walk: their
   * configurations not here are left, and noted so that they stay out once the user is enabled
   * again; so are those of a user each page finds disabled here (in the import's transaction).
   */
  readonly usersDisabledHereAtStart: ReadonlySet<UserId>;
  /** The node of each configuration (expired ones too), for the connection log. */
  readonly nodeOfConnection: Map<string, NodeNumber>;
  /**
   * The configurations to bring per key they connect with, for the plan's check that each key is
   * brought or here (counted by each walk's checks; the plan reads them after its walk): OpenVPN
   * ones per profile (the CA, and the profile's tls-crypt key), WireGuard ones per node (the
   * node's key).
   */
  readonly openVpnPerProfile: Map<ProfileId, number>;
  readonly wireGuardPerNode: Map<NodeNumber, number>;
  /**
   * ATOM: a history row that ended before this is not brought (the retention here,
   * `connectionLogRetention`, would delete it again), unless its user is in `heldUsers`.
   */
  readonly historySince: string;
  /** Users under a legal hold now: the retention keeps their history, so the import brings all of it. */
  readonly heldUsers: ReadonlySet<string>;
  /**
   * eduVPN's users' permissions that a profile's `aclPermissionList` names, read before the walk:
   * an OpenVPN certificate eduVPN refuses for that list is left, and noted so that it stays out.
   */
  readonly aclPermissions: AclPermissions;
}

/**
 * One page checked: what to bring, how many are here or expired, what was removed here (and of
 * that what the import notes as left, so that it stays out), and the conflicts.
 */
export interface PageOutcome<Row> {
  readonly bring: Row[];
  alreadyHere: number;
  expired: number;
  readonly removedHere: RemovedHere[];
  readonly withheld: Omit<ImportedRecord, 'importedAt'>[];
  readonly conflicts: ImportConflict[];
}

export function emptyOutcome<Row>(): PageOutcome<Row> {
  return { bring: [], alreadyHere: 0, expired: 0, removedHere: [], withheld: [], conflicts: [] };
}

/**
 * A page's configurations left to check: the expired ones counted, those removed here (or of a
 * user disabled here) named, and of these those to note as left. Left before any other check:
 * their profile or address may be another's here by now.
 */
async function leftToCheck<
  C extends { readonly createdAt: string; readonly expiresAt: string; readonly userId: UserId },
>(
  db: Db,
  page: readonly C[],
  facts: ImportFacts,
  outcome: Pick<PageOutcome<unknown>, 'expired' | 'removedHere' | 'withheld' | 'conflicts'>,
  configurations: {
    readonly proto: 'wireguard' | 'openvpn';
    readonly kind: 'wireGuardPeers' | 'certificates';
    readonly idOf: (configuration: C) => string;
  },
): Promise<C[]> {
  const { proto, kind, idOf } = configurations;
  const unexpired = page.filter((configuration) => configuration.expiresAt > facts.now);
  outcome.expired = page.length - unexpired.length;
  // A user id this portal cannot hold is asked of nothing here (PostgreSQL refuses a NUL in a query too).
  const usable = unexpired.filter((configuration) => {
    const reason = ofUnusableUser(configuration);
    if (reason !== undefined) outcome.conflicts.push({ kind, record: idOf(configuration), reason });
    return reason === undefined;
  });
  const removed = await configurationsRemovedHere(
    db,
    proto,
    usable.map((configuration) => ({
      connectionId: idOf(configuration),
      userId: configuration.userId,
      createdAt: configuration.createdAt,
    })),
    facts.usersDisabledHereAtStart,
  );
  return usable.filter((configuration) => {
    const removal = removed.get(idOf(configuration));
    if (removal === undefined) return true;
    outcome.removedHere.push({ kind, record: idOf(configuration), reason: removal.reason });
    if (removal.withheld !== false)
      outcome.withheld.push({
        kind: proto,
        recordId: idOf(configuration),
        expiresAt: configuration.expiresAt,
        withheld: removal.withheld,
      });
    return false;
  });
}

/** A WireGuard configuration to insert, with its place in this portal's pool. */
export type PeerToBring = NewPeer & { readonly pool: PoolKey };

/** Notes what a configuration tells the other kinds (called for every one, expired too). */
export function noteConfiguration(
  facts: ImportFacts,
  record: { userId: UserId; createdAt: string; expiresAt: string; authKey: string | null; nodeNumber: NodeNumber },
  connectionId: string,
): void {
  const earliest = facts.earliestConfiguration.get(record.userId);
  if (earliest === undefined || record.createdAt < earliest)
    facts.earliestConfiguration.set(record.userId, record.createdAt);
  if (record.authKey !== null && record.expiresAt > facts.now) {
    const named = facts.namedAuthorizations.get(record.authKey);
    if (named === undefined || record.expiresAt > named)
      facts.namedAuthorizations.set(record.authKey, record.expiresAt);
  }
  facts.nodeOfConnection.set(connectionId, record.nodeNumber);
}

/**
 * Why a record whose user_id matches no user in eduVPN's database is not brought: it would have
 * no user here. The reader matched the others to their user as eduVPN's database does (MariaDB:
 * `ALICE` is `alice`'s), so only a row the foreign key should have refused is left.
 */
export function withoutUser(record: EduVpnUserOwned): string {
  return `its user ${record.userId} is not in eduVPN's table users (delete the row there, or add the user)`;
}

/**
 * Why this portal cannot hold a user id eduVPN's database took (SQLite does not enforce its
 * `VARCHAR(255)`), or undefined when it can: longer than the columns here (PostgreSQL would
 * refuse the write in the middle of the import), or with a NUL character (PostgreSQL cannot
 * store one). The Admin API takes neither, so such a user could never be addressed here; the
 * plan names it as a conflict, with what is issued to it, before anything is written.
 */
export function unusableUserId(userId: string): string | undefined {
  const length = [...userId].length;
  if (length > MAX_USER_ID_LENGTH)
    return `the user id is ${length} characters long; this portal and its Admin API take at most ${MAX_USER_ID_LENGTH} (shorten it in eduVPN's database, in every table that names it, or delete the user there)`;
  if (userId.includes('\u0000'))
    return "the user id contains a NUL character, which this portal cannot store and its Admin API does not take (change it in eduVPN's database, or delete the user there)";
  return undefined;
}

/** Why a configuration, authorization or history row is not brought: its user's id cannot be held here. */
export function ofUnusableUser(record: { readonly userId: UserId }, whose = 'its user'): string | undefined {
  const problem = unusableUserId(record.userId);
  return problem === undefined ? undefined : `${whose} cannot be brought: ${problem}`;
}

/**
 * Told with a profile or node not configured here: one eduVPN retired leaves configurations that
 * do not connect there either, and adding it here (what the conflict seems to ask) would let
 * them connect again.
 */
function retiredThere(served: string, added: string): string {
  return `if eduVPN no longer serves ${served}, these configurations do not connect there either, and adding ${added} here would let them connect again: delete their rows in eduVPN's database instead`;
}

/** Where a configuration goes here, or why it cannot. */
function destination(
  config: PortalConfig,
  record: { profileId: string; nodeNumber: NodeNumber },
  proto: VpnProto,
): { readonly node: ProfileNode } | { readonly reason: string } {
  const profile = findProfile(config, record.profileId);
  if (profile === undefined) {
    const known = config.profiles.map((candidate) => candidate.profileId).join(', ');
    return {
      reason: `profile ${record.profileId} is not configured here (profiles here: ${known}); ${retiredThere(`profile ${record.profileId}`, 'the profile')}`,
    };
  }
  const node = profile.nodes.find((candidate) => candidate.nodeNumber === record.nodeNumber);
  if (node === undefined) {
    const nodes = profile.nodes.map((candidate) => candidate.nodeNumber).join(', ');
    return {
      reason: `node ${record.nodeNumber} is not one of profile ${record.profileId}'s nodes here (${nodes}); ${retiredThere(`profile ${record.profileId} on node ${record.nodeNumber}`, 'the node to the profile')}`,
    };
  }
  const offered = proto === 'wireguard' ? node.wireGuard !== null : node.openVpn !== null;
  if (!offered) {
    const name = proto === 'wireguard' ? 'WireGuard' : 'OpenVPN';
    return { reason: `profile ${record.profileId} offers no ${name} on node ${record.nodeNumber} here` };
  }
  return { node };
}

/** Checks a page of WireGuard peers. */
export async function checkPeers(
  config: PortalConfig,
  db: Db,
  page: readonly EduVpnWireGuardPeer[],
  facts: ImportFacts,
): Promise<PageOutcome<PeerToBring>> {
  const outcome = emptyOutcome<PeerToBring>();
  const toCheck = await leftToCheck(db, page, facts, outcome, {
    proto: 'wireguard',
    kind: 'wireGuardPeers',
    idOf: (peer) => peer.publicKey,
  });
  const candidates: PeerToBring[] = [];
  for (const peer of toCheck) {
    const placed = peer.userFound ? placePeer(config, peer, facts) : { reason: withoutUser(peer) };
    if ('reason' in placed)
      outcome.conflicts.push({ kind: 'wireGuardPeers', record: peer.publicKey, reason: placed.reason });
    else candidates.push(placed);
  }
  const byKey = new Map(
    (
      await peersWithKeys(
        db,
        candidates.map((peer) => peer.publicKey),
      )
    ).map((peer) => [peer.publicKey as string, peer]),
  );
  const atAddresses = await peersAtAddresses(db, candidates);
  const byAddress = new Map(atAddresses.flatMap((peer) => [[peer.ipFour, peer] as const, [peer.ipSix, peer] as const]));
  for (const peer of candidates) {
    const here = byKey.get(peer.publicKey);
    const record = peer.publicKey;
    if (here !== undefined) {
      const same =
        here.userId === peer.userId &&
        here.profileId === peer.profileId &&
        here.nodeNumber === peer.nodeNumber &&
        here.ipFour === peer.ipFour &&
        here.ipSix === peer.ipSix;
      if (same) outcome.alreadyHere++;
      else
        outcome.conflicts.push({
          kind: 'wireGuardPeers',
          record,
          reason: `the public key is used here by another configuration (user ${here.userId}, profile ${here.profileId}, node ${here.nodeNumber}, ${here.ipFour}, ${here.ipSix})`,
        });
      continue;
    }
    const holder = byAddress.get(peer.ipFour) ?? byAddress.get(peer.ipSix);
    if (holder !== undefined)
      outcome.conflicts.push({
        kind: 'wireGuardPeers',
        record,
        reason: `its addresses ${peer.ipFour}, ${peer.ipSix} are used here by configuration ${holder.publicKey} (user ${holder.userId})`,
      });
    else outcome.bring.push(peer);
  }
  for (const peer of outcome.bring) countOne(facts.wireGuardPerNode, peer.nodeNumber);
  return outcome;
}

/** The peer at its place in this portal's pool (its addresses in this portal's text), or why it has none. */
function placePeer(
  config: PortalConfig,
  peer: EduVpnWireGuardPeer,
  facts: ImportFacts,
): PeerToBring | { reason: string } {
  const target = destination(config, peer, 'wireguard');
  if ('reason' in target) return target;
  const range = target.node.wireGuard;
  if (range === null) return { reason: 'no WireGuard here' };
  const place = poolIndexOf(range.rangeFour, range.rangeSix, peer);
  if ('problem' in place) {
    const where = `profile ${peer.profileId} on node ${peer.nodeNumber} (${range.rangeFour}, ${range.rangeSix})`;
    return {
      reason:
        place.problem === 'outside'
          ? `its addresses ${peer.ipFour}, ${peer.ipSix} are outside this portal's pool for ${where}`
          : `its addresses ${peer.ipFour}, ${peer.ipSix} are not a pair of this portal's pool for ${where}: IPv4 network + 2 + i must go with IPv6 network + 2 + i`,
    };
  }
  return {
    publicKey: peer.publicKey,
    userId: peer.userId,
    profileId: peer.profileId,
    nodeNumber: peer.nodeNumber,
    displayName: peer.displayName,
    ...clientAddressesAt(range.rangeFour, range.rangeSix, place.index),
    poolIndex: place.index,
    createdAt: peer.createdAt,
    expiresAt: peer.expiresAt,
    authKey: peer.authKey,
    expiryWarned: peer.expiresAt <= facts.warningHorizon,
    deviceId: null,
    pool: { profileId: peer.profileId, nodeNumber: peer.nodeNumber, ...range },
  };
}

/** Checks a page of OpenVPN certificates. */
export async function checkCertificates(
  config: PortalConfig,
  db: Db,
  page: readonly EduVpnCertificate[],
  facts: ImportFacts,
): Promise<PageOutcome<OpenVpnCertificate>> {
  const outcome = emptyOutcome<OpenVpnCertificate>();
  const toCheck = await leftToCheck(db, page, facts, outcome, {
    proto: 'openvpn',
    kind: 'certificates',
    idOf: (certificate) => certificate.commonName,
  });
  const candidates: OpenVpnCertificate[] = [];
  for (const certificate of toCheck) {
    const target = certificate.userFound
      ? destination(config, certificate, 'openvpn')
      : { reason: withoutUser(certificate) };
    if ('reason' in target)
      outcome.conflicts.push({ kind: 'certificates', record: certificate.commonName, reason: target.reason });
    else
      candidates.push({
        ...certificate,
        commonName: certificate.commonName as ConnectionId,
        publicKey: null,
        expiryWarned: certificate.expiresAt <= facts.warningHorizon,
      });
  }
  const here = new Map(
    (
      await certificatesWithNames(
        db,
        candidates.map((candidate) => candidate.commonName),
      )
    ).map((row) => [row.commonName as string, row]),
  );
  for (const certificate of candidates) {
    const stored = here.get(certificate.commonName);
    if (stored === undefined) bringOrWithhold(config, certificate, facts, outcome);
    else if (
      stored.userId === certificate.userId &&
      stored.profileId === certificate.profileId &&
      stored.nodeNumber === certificate.nodeNumber
    )
      outcome.alreadyHere++;
    else
      outcome.conflicts.push({
        kind: 'certificates',
        record: certificate.commonName,
        reason: `the common name is used here by another configuration (user ${stored.userId}, profile ${stored.profileId}, node ${stored.nodeNumber})`,
      });
  }
  return outcome;
}

/**
 * Brings a certificate not here, or leaves it (noted, so that it stays out) when eduVPN refuses it
 * at connect for its profile's `aclPermissionList`, which this portal does not check.
 */
function bringOrWithhold(
  config: PortalConfig,
  certificate: OpenVpnCertificate,
  facts: ImportFacts,
  outcome: PageOutcome<OpenVpnCertificate>,
): void {
  const refused = aclRefusal(config, certificate, facts.aclPermissions);
  if (refused === undefined) {
    outcome.bring.push(certificate);
    countOne(facts.openVpnPerProfile, certificate.profileId);
    return;
  }
  outcome.removedHere.push({ kind: 'certificates', record: certificate.commonName, reason: refused });
  outcome.withheld.push({
    kind: 'openvpn',
    recordId: certificate.commonName,
    expiresAt: certificate.expiresAt,
    withheld: 'acl',
  });
}

function countOne<Key>(counts: Map<Key, number>, key: Key): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}
