// Client addresses of WireGuard configurations: taken from the pool of the profile's range
// on the chosen node, given back when a configuration is deleted.
import type { Transaction } from 'kysely';
import { type PortalConfig, type ProfileNode, findProfile } from '../../config/portal-config.js';
import { releasePoolIndexes, type PoolKey } from '../../storage/ip-pools.js';
import {
  insertPeerAtFreeAddress,
  insertPeerInOneStatement,
  type GaveUp,
  type UnplacedPeer,
  type UserOfCreate,
} from '../../storage/new-peer.js';
import { closingClausesOnly, type ClosingWrite } from '../../storage/closing-writes.js';
import type { Db } from '../../storage/database.js';
import type { Database } from '../../storage/schema.js';
import { countPeersByProfileAndNode, type PeersInPool, type WireGuardPeer } from '../../storage/wg-peers.js';
import { clientAddressesAt, poolCapacity } from '../../wireguard/address-pool.js';
import type { NodeNumber, ProfileId } from '../../shared/ids.js';
import type { PortalContext } from '../context.js';

/**
 * Stores a configuration at the lowest free address of the pool of the profile's range on
 * `node`, then runs the change's closing writes (one statement on PostgreSQL, as the change's
 * last step: src/storage/new-peer.ts). Only a configuration from before a range change can hold
 * a pool address: then the index is skipped for good and the next one tried. null when the pool
 * is full.
 */
export async function insertAtFreeAddress(
  trx: Transaction<Database>,
  node: ProfileNode,
  peer: UnplacedPeer,
  closingWrites: readonly ClosingWrite[],
): Promise<WireGuardPeer | null> {
  if (node.wireGuard === null) return null;
  const key = poolKey(peer.profileId, node);
  // The closing writes run with the first attempt, which holds the pool's row from then on.
  for (let writes = closingWrites; ; writes = []) {
    const taken = await insertPeerAtFreeAddress(trx, key, peer, writes);
    if (taken === null) return null;
    if (taken.peer !== null) return taken.peer;
  }
}

/**
 * PostgreSQL: the user and a configuration on `node` stored in one statement with the change's
 * closing writes (src/storage/new-peer.ts), or given up with nothing written; also given up
 * when a closing write cannot be part of one statement.
 */
export async function insertInOneStatement(
  db: Db,
  node: ProfileNode,
  peer: UnplacedPeer,
  user: UserOfCreate,
  closingWrites: readonly ClosingWrite[],
): Promise<{ readonly stored: WireGuardPeer } | { readonly gaveUp: GaveUp }> {
  const clauses = closingClausesOnly(closingWrites, true);
  if (node.wireGuard === null || clauses === null) return { gaveUp: 'not-simple' };
  const answer = await insertPeerInOneStatement(db, poolKey(peer.profileId, node), peer, user, clauses);
  return 'gaveUp' in answer ? answer : { stored: answer.peer };
}

/**
 * Returns deleted peers' addresses to their pools, those that still belong to the configured
 * range, a few hundred per statement: a destroy of a user with 150,000 configurations gives them
 * back in a few hundred statements, not 150,000.
 */
export async function releaseAddresses(
  trx: Transaction<Database>,
  config: PortalConfig,
  peers: readonly WireGuardPeer[],
): Promise<void> {
  const pools = new Map<string, { readonly key: PoolKey; readonly indexes: number[] }>();
  for (const peer of peers) {
    const node = findProfile(config, peer.profileId)?.nodes.find(
      (candidate) => candidate.nodeNumber === peer.nodeNumber,
    );
    if (node?.wireGuard == null) continue;
    const { rangeFour, rangeSix } = node.wireGuard;
    if (peer.poolIndex >= poolCapacity(rangeFour, rangeSix)) continue;
    // After a range change the old addresses are not in the new pool: nothing to give back.
    if (clientAddressesAt(rangeFour, rangeSix, peer.poolIndex).ipFour !== peer.ipFour) continue;
    const name = `${peer.profileId} ${node.nodeNumber}`;
    const pool = pools.get(name) ?? { key: poolKey(peer.profileId, node), indexes: [] };
    pools.set(name, pool);
    pool.indexes.push(peer.poolIndex);
  }
  for (const { key, indexes } of pools.values()) await releasePoolIndexes(trx, key, indexes);
}

function poolKey(profileId: ProfileId, node: ProfileNode): PoolKey {
  if (node.wireGuard === null) throw new Error('node has no WireGuard range');
  return {
    profileId,
    nodeNumber: node.nodeNumber,
    rangeFour: node.wireGuard.rangeFour,
    rangeSix: node.wireGuard.rangeSix,
  };
}

/** A WireGuard address pool (a profile's range on one node): how many of its addresses configurations hold. */
export interface PoolUse {
  readonly profileId: ProfileId;
  readonly nodeNumber: NodeNumber;
  readonly used: number;
  readonly size: number;
}

/** Every WireGuard pool of the configured profiles, in the configuration's order, with its use. */
export async function wireGuardPoolUse(ctx: PortalContext): Promise<PoolUse[]> {
  return poolUseOf(ctx.config, await countPeersByProfileAndNode(ctx.db));
}

/** The same, from counts of configurations per pool already read (countPeersByProfileAndNode). */
export function poolUseOf(config: PortalConfig, counts: readonly PeersInPool[]): PoolUse[] {
  const poolName = (profileId: string, nodeNumber: number): string => JSON.stringify([profileId, nodeNumber]);
  const used = new Map(counts.map((row) => [poolName(row.profileId, row.nodeNumber), row.count]));
  return config.profiles.flatMap((profile) =>
    profile.nodes.flatMap((node) => {
      if (node.wireGuard === null) return [];
      const count = used.get(poolName(profile.profileId, node.nodeNumber)) ?? 0;
      const size = poolCapacity(node.wireGuard.rangeFour, node.wireGuard.rangeSix);
      return [{ profileId: profile.profileId, nodeNumber: node.nodeNumber, used: count, size }];
    }),
  );
}
