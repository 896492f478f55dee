// GET /profiles (an extension): the profiles a key may use, with what `create` needs to know
// before asking (protocols, full or split tunnel, the client ranges on each node). A key limited
// to some profiles sees only those.
import type { Profile } from '../../config/portal-config.js';
import type { ProfileListing } from '../../protocol/admin-api.js';
import type { VpnProto } from '../../shared/ids.js';
import type { PortalContext } from '../context.js';
import { visibleProfiles } from '../access/index.js';

export function listProfiles(ctx: PortalContext): ProfileListing[] {
  return visibleProfiles(ctx, ctx.config.profiles).map((profile) => ({
    profile_id: profile.profileId,
    display_name: profile.displayName,
    vpn_proto_list: protocolsOf(profile),
    default_gateway: profile.defaultGateway,
    ranges: profile.nodes.flatMap((node) => [
      ...(node.wireGuard === null
        ? []
        : [
            {
              node_number: node.nodeNumber,
              vpn_proto: 'wireguard' as const,
              range_four: node.wireGuard.rangeFour,
              range_six: node.wireGuard.rangeSix,
            },
          ]),
      ...(node.openVpn === null
        ? []
        : [
            {
              node_number: node.nodeNumber,
              vpn_proto: 'openvpn' as const,
              range_four: node.openVpn.rangeFour,
              range_six: node.openVpn.rangeSix,
            },
          ]),
    ]),
  }));
}

/** The protocols the profile offers, its preferred one first. */
function protocolsOf(profile: Profile): VpnProto[] {
  const offered: VpnProto[] = [
    ...(profile.wireGuard === null ? [] : ['wireguard' as const]),
    ...(profile.openVpn === null ? [] : ['openvpn' as const]),
  ];
  return offered.sort((a, b) => Number(b === profile.preferredProto) - Number(a === profile.preferredProto));
}
