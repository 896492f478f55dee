// How a WireGuard peer is written on the vpn-daemon wire.
import { formatAtom } from '../../shared/time.js';
import type { PeerListEntry } from '../../protocol/vpn-daemon.js';
import type { WgPeer } from '../wireguard/dump.js';

export function toPeerListEntry(peer: WgPeer): PeerListEntry {
  return {
    public_key: peer.publicKey,
    ip_net: [...peer.allowedIps],
    ...(peer.latestHandshake === null ? {} : { last_handshake_time: formatAtom(peer.latestHandshake) }),
    bytes_in: peer.bytesReceived,
    bytes_out: peer.bytesSent,
    // Omitted, like the handshake time, for a peer that never sent anything.
    ...(peer.endpoint === null ? {} : { endpoint: peer.endpoint }),
  };
}
