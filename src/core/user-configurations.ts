// GET /user_configuration_list: every configuration of one user, WireGuard and OpenVPN,
// newest expiry first.
import { certificatesOfUser } from '../storage/certificates.js';
import { peersOfUser } from '../storage/wg-peers.js';
import type { PortalContext } from './context.js';
import { existingUser } from './existing-user.js';
import type { UserId, VpnProto } from '../shared/ids.js';

export interface UserConfiguration {
  readonly connection_id: string;
  readonly profile_id: string;
  readonly display_name: string;
  readonly auth_key: string | null;
  readonly expires_at: string;
  readonly vpn_proto: VpnProto;
}

export async function userConfigurations(ctx: PortalContext, userId: UserId): Promise<UserConfiguration[]> {
  await existingUser(ctx, userId);
  const wireGuard = (await peersOfUser(ctx.db, userId)).map(
    (peer): UserConfiguration => ({
      connection_id: peer.publicKey,
      profile_id: peer.profileId,
      display_name: peer.displayName,
      auth_key: peer.authKey,
      expires_at: peer.expiresAt,
      vpn_proto: 'wireguard',
    }),
  );
  const openVpn = (await certificatesOfUser(ctx.db, userId)).map(
    (certificate): UserConfiguration => ({
      connection_id: certificate.commonName,
      profile_id: certificate.profileId,
      display_name: certificate.displayName,
      auth_key: certificate.authKey,
      expires_at: certificate.expiresAt,
      vpn_proto: 'openvpn',
    }),
  );
  // ATOM strings in UTC sort as text.
  return [...wireGuard, ...openVpn].sort(
    (a, b) => b.expires_at.localeCompare(a.expires_at) || (a.connection_id < b.connection_id ? -1 : a.connection_id > b.connection_id ? 1 : 0),
  );
}
