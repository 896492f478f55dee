// GET /user_configuration_list: every configuration of one user, newest expiry first.
import { peersOfUser } from '../storage/wg-peers.js';
import type { PortalContext } from './context.js';
import { existingUser } from './existing-user.js';
import type { UserId, VpnProto } from './ids.js';

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
  const peers = await peersOfUser(ctx.db, userId);
  return peers.map((peer) => ({
    connection_id: peer.publicKey,
    profile_id: peer.profileId,
    display_name: peer.displayName,
    auth_key: peer.authKey,
    expires_at: peer.expiresAt,
    vpn_proto: 'wireguard',
  }));
}
