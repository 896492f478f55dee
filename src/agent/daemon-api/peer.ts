// How a WireGuard peer is written on the vpn-daemon wire.
import { formatAtom } from '../../shared/time.js';
import type { PeerListEntry } from '../../protocol/vpn-daemon.js';
import type { ListedPeer, WgPeer } from '../wireguard/dump.js';

/** A listed peer also says when its run of handshakes began; a removed one does not. */
export function toPeerListEntry(peer: WgPeer | ListedPeer): PeerListEntry {
  const onlineSince = 'onlineSince' in peer ? peer.onlineSince : null;
  return {
    public_key: peer.publicKey,
    ip_net: [...peer.allowedIps],
    ...(peer.latestHandshake === null ? {} : { last_handshake_time: formatAtom(peer.latestHandshake) }),
    bytes_in: peer.bytesReceived,
    bytes_out: peer.bytesSent,
    // Omitted, like the handshake time, for a peer that never sent anything.
    ...(peer.endpoint === null ? {} : { endpoint: peer.endpoint }),
    ...(onlineSince === null ? {} : { online_since: formatAtom(onlineSince) }),
  };
}
