// Turns a batch of add/remove requests into the fewest `wg set` changes with the same end state.
import type { WireGuardKey } from '../../shared/ids.js';
import type { WgPeer } from './dump.js';
import type { PeerChange } from './wg-tool.js';

/** One add_peer or remove_peer call of the daemon protocol, already validated. */
export type PeerRequest =
  | {
      readonly kind: 'add';
      readonly publicKey: WireGuardKey;
      readonly allowedIps: readonly string[];
      /** Where to send packets until the peer's own arrive (a restored peer's last known address). */
      readonly endpoint?: string;
    }
  | { readonly kind: 'remove'; readonly publicKey: WireGuardKey };

/** What the caller of a request learns: remove answers with the peer as it was, or null. */
export type PeerRequestResult = { readonly kind: 'added' } | { readonly kind: 'removed'; readonly peer: WgPeer | null };

export interface PeerBatchPlan {
  readonly changes: readonly PeerChange[];
  readonly results: readonly PeerRequestResult[];
}

/**
 * Turns requests (in arrival order) into one change per peer that gives the same end state as
 * applying them one by one, plus each request's own answer. `currentPeers` is the interface
 * before the batch, as far as the agent knows (peer-view.ts: every change the agent wrote is in
 * it); it only matters for removals. A removal of an absent peer is not written: at the cap,
 * wireguard-go would have to create the peer to remove it, and refuse.
 */
export function planPeerBatch(
  requests: readonly PeerRequest[],
  currentPeers: ReadonlyMap<WireGuardKey, WgPeer>,
): PeerBatchPlan {
  // Latest known state of every touched peer; re-inserted on each touch so the final order
  // follows the last request per peer (matters only if two peers claim the same address).
  const touched = new Map<WireGuardKey, WgPeer | null>();
  const endpoints = new Map<WireGuardKey, string>();
  const results: PeerRequestResult[] = [];

  for (const request of requests) {
    const before = touched.has(request.publicKey)
      ? (touched.get(request.publicKey) ?? null)
      : (currentPeers.get(request.publicKey) ?? null);
    touched.delete(request.publicKey);
    if (request.kind === 'add') {
      if (request.endpoint !== undefined) endpoints.set(request.publicKey, request.endpoint);
      touched.set(request.publicKey, peerAfterSet(request, before));
      results.push({ kind: 'added' });
    } else {
      endpoints.delete(request.publicKey);
      touched.set(request.publicKey, null);
      results.push({ kind: 'removed', peer: before });
    }
  }

  const changes: PeerChange[] = [];
  for (const [publicKey, peer] of touched) {
    if (peer !== null) {
      const endpoint = endpoints.get(publicKey);
      changes.push({
        kind: 'set',
        publicKey,
        allowedIps: peer.allowedIps,
        ...(endpoint === undefined ? {} : { endpoint }),
      });
    } else if (currentPeers.has(publicKey)) changes.push({ kind: 'remove', publicKey });
  }
  return { changes, results };
}

/** A peer once set to these addresses (and endpoint): its handshake and counters stay. */
export function peerAfterSet(
  set: { readonly publicKey: WireGuardKey; readonly allowedIps: readonly string[]; readonly endpoint?: string },
  before: WgPeer | null | undefined,
): WgPeer {
  return {
    publicKey: set.publicKey,
    allowedIps: set.allowedIps,
    endpoint: set.endpoint ?? before?.endpoint ?? null,
    latestHandshake: before?.latestHandshake ?? null,
    bytesReceived: before?.bytesReceived ?? 0,
    bytesSent: before?.bytesSent ?? 0,
  };
}
