// Client addresses of WireGuard configurations: taken from the pool of the profile's range
// on the chosen node, given back when a configuration is deleted.
import type { Transaction } from 'kysely';
import { type PortalConfig, type ProfileNode, findProfile } from '../../config/portal-config.js';
import { releasePoolIndex, takePoolIndex, type PoolKey } from '../../storage/ip-pools.js';
import type { Database } from '../../storage/schema.js';
import type { WireGuardPeer } from '../../storage/wg-peers.js';
import { clientAddressesAt, poolCapacity } from '../../wireguard/address-pool.js';
import type { ProfileId } from '../../shared/ids.js';

export interface AllocatedAddresses {
  readonly poolIndex: number;
  readonly ipFour: string;
  readonly ipSix: string;
}

/**
 * Takes addresses from the pool of the profile's range on `node` and stores a configuration
 * with them (`insert`). Only a configuration from before a range change can hold a pool address:
 * then `insert` stores nothing (null), the index is skipped for good and the next one tried.
 * null when the pool is full.
 */
export async function insertWithFreeAddresses<T>(
  trx: Transaction<Database>,
  profileId: ProfileId,
  node: ProfileNode,
  insert: (addresses: AllocatedAddresses) => Promise<T | null>,
): Promise<T | null> {
  if (node.wireGuard === null) return null;
  const { rangeFour, rangeSix } = node.wireGuard;
  const key = poolKey(profileId, node);
  const capacity = poolCapacity(rangeFour, rangeSix);
  for (;;) {
    const poolIndex = await takePoolIndex(trx, key, capacity);
    if (poolIndex === null) return null;
    const stored = await insert({ poolIndex, ...clientAddressesAt(rangeFour, rangeSix, poolIndex) });
    if (stored !== null) return stored;
  }
}

/** Returns a deleted peer's addresses to its pool, if they still belong to the configured range. */
export async function releaseAddresses(
  trx: Transaction<Database>,
  config: PortalConfig,
  peer: WireGuardPeer,
): Promise<void> {
  const node = findProfile(config, peer.profileId)?.nodes.find((candidate) => candidate.nodeNumber === peer.nodeNumber);
  if (node?.wireGuard == null) return;
  const { rangeFour, rangeSix } = node.wireGuard;
  if (peer.poolIndex >= poolCapacity(rangeFour, rangeSix)) return;
  // After a range change the old addresses are not in the new pool: nothing to give back.
  if (clientAddressesAt(rangeFour, rangeSix, peer.poolIndex).ipFour !== peer.ipFour) return;
  await releasePoolIndex(trx, poolKey(peer.profileId, node), peer.poolIndex);
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
