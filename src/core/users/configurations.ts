// GET /user_configuration_list: every configuration of one user, WireGuard and OpenVPN,
// newest expiry first.
import type { UserConfiguration } from '../../protocol/admin-api.js';
import type { UserId, VpnProto } from '../../shared/ids.js';
import { certificatesOfUser } from '../../storage/certificates.js';
import { peersOfUser } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { existingUser } from './existing-user.js';
import { visibleToCall } from '../access/index.js';

/** What both kinds of configuration row share. */
interface StoredConfiguration {
  readonly profileId: string;
  readonly displayName: string;
  readonly authKey: string | null;
  readonly expiresAt: string;
}

/** A key limited to some profiles sees only the configurations in them. */
export async function userConfigurations(ctx: PortalContext, userId: UserId): Promise<UserConfiguration[]> {
  await existingUser(ctx, userId);
  const wireGuard = visibleToCall(ctx, await peersOfUser(ctx.db, userId)).map((peer) =>
    entry(peer, peer.publicKey, 'wireguard'),
  );
  const openVpn = visibleToCall(ctx, await certificatesOfUser(ctx.db, userId)).map((certificate) =>
    entry(certificate, certificate.commonName, 'openvpn'),
  );
  const visible = [...wireGuard, ...openVpn];
  // ATOM strings in UTC sort as text.
  return visible.sort(
    (a, b) =>
      b.expires_at.localeCompare(a.expires_at) ||
      (a.connection_id < b.connection_id ? -1 : a.connection_id > b.connection_id ? 1 : 0),
  );
}

function entry(row: StoredConfiguration, connectionId: string, vpnProto: VpnProto): UserConfiguration {
  return {
    connection_id: connectionId,
    profile_id: row.profileId,
    display_name: row.displayName,
    auth_key: row.authKey,
    expires_at: row.expiresAt,
    vpn_proto: vpnProto,
  };
}
