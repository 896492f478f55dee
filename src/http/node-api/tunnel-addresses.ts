// The tunnel addresses a node reports for an OpenVPN client must lie in the profile's OpenVPN
// ranges on that node: an address from elsewhere would attribute a false session to whoever
// looks that address up.
import { findProfile, type PortalConfig } from '../../config/portal-config.js';
import { parseIpAddress, parseIpPrefix, prefixContainsAddress } from '../../net/ip-prefix.js';
import type { NodeNumber } from '../../shared/ids.js';
import { HttpError } from '../plumbing/http-error.js';

export interface ReportedTunnelAddresses {
  readonly profileId: string;
  readonly ipFour?: string | undefined;
  readonly ipSix?: string | undefined;
}

/**
 * Throws 400 when an address lies outside the profile's OpenVPN range of its family on this
 * node. A profile that does not run OpenVPN here is left to the caller (a connect is refused).
 */
export function checkTunnelAddresses(
  config: PortalConfig,
  nodeNumber: NodeNumber,
  reported: ReportedTunnelAddresses,
): void {
  const range = findProfile(config, reported.profileId)?.nodes.find((node) => node.nodeNumber === nodeNumber)?.openVpn;
  if (range === undefined || range === null) return;
  const outside = (name: string, address: string | undefined, rangeText: string): void => {
    if (address === undefined || prefixContainsAddress(parseIpPrefix(rangeText), parseIpAddress(address))) return;
    throw new HttpError(
      400,
      `invalid value for "${name}": not in the OpenVPN range of profile "${reported.profileId}" on this node`,
    );
  };
  outside('ip_four', reported.ipFour, range.rangeFour);
  outside('ip_six', reported.ipSix, range.rangeSix);
}
