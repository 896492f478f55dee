// How a WireGuard peer is written on the vpn-daemon wire.
import { formatAtom } from '../../shared/time.js';
import type { WgPeer } from '../wireguard/dump.js';

/** A peer in the JSON of the vpn-daemon protocol (peer_list entries, remove_peer answer). */
export interface DaemonPeer {
  readonly public_key: string;
  readonly ip_net: readonly string[];
  /** Omitted, not null, when the peer never completed a handshake. */
  readonly last_handshake_time?: string;
  readonly bytes_in: number;
  readonly bytes_out: number;
}

export function toDaemonPeer(peer: WgPeer): DaemonPeer {
  return {
    public_key: peer.publicKey,
    ip_net: peer.allowedIps,
    ...(peer.latestHandshake === null ? {} : { last_handshake_time: formatAtom(peer.latestHandshake) }),
    bytes_in: peer.bytesReceived,
    bytes_out: peer.bytesSent,
  };
}

