// The OpenVPN server files of one node (reference §8.4), handed to its agent through the
// Node API: one file per (profile, port), with the profile's tls-crypt key and a server
// certificate for the node's host name, issued by the portal's CA.
import {
  type OpenVpnServerFile,
  type OpenVpnServerNodeSettings,
  type OpenVpnServerProfileInput,
  renderOpenVpnServerFiles,
} from '../../openvpn/server-config.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import type { NodeNumber } from '../../shared/ids.js';

export async function openVpnServerFiles(
  ctx: PortalContext,
  nodeNumber: NodeNumber,
  profileFilter: ReadonlySet<string> | null,
  settings: OpenVpnServerNodeSettings,
): Promise<OpenVpnServerFile[]> {
  const deployed = ctx.config.profiles
    .filter((profile) => profileFilter === null || profileFilter.has(profile.profileId))
    .flatMap((profile) => {
      const node = profile.nodes.find((candidate) => candidate.nodeNumber === nodeNumber && candidate.openVpn !== null);
      return node === undefined ? [] : [{ profile, node }];
    });
  if (deployed.length === 0) return [];
  const ca = await ctx.openVpnKeys.ca();
  if (ca === null)
    throw new PortalError(
      'unavailable',
      'the portal has no OpenVPN CA yet: run "vpn-portal generate-secrets" on the portal',
    );
  const now = ctx.clock.now();
  const inputs: OpenVpnServerProfileInput[] = [];
  for (const { profile, node } of deployed) {
    inputs.push({
      profile,
      node,
      caCertificatePem: ca.certificatePem,
      server: await ctx.openVpnKeys.serverCredentials(nodeNumber, profile.profileId, node.hostName, now),
      tlsCryptKey: ctx.openVpnKeys.tlsCryptKey(profile.profileId),
    });
  }
  return renderOpenVpnServerFiles(inputs, settings);
}
