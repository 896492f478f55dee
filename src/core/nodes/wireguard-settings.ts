// The WireGuard settings of one node, handed to its agent through the Node API: the node's
// private key, listen port, MTU, the gateway address of every WireGuard range it serves (IPv4
// first, then IPv6, as the reference §6.4) and, with WireGuard over TCP, the host names its
// ProxyGuard relay answers for.
import type { z } from 'zod';
import { parseIpPrefix } from '../../net/ip-prefix.js';
import type { wireGuardServerConfigSchema } from '../../protocol/node-api.js';
import type { NodeNumber } from '../../shared/ids.js';
import { gatewayAddresses, poolCapacity } from '../../wireguard/address-pool.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';

/** The WireGuard part of a node's `server_config` answer, as the portal makes it. */
export type WireGuardNodeSettings = z.input<typeof wireGuardServerConfigSchema>;

/** Null when no WireGuard profile (of those the node asked for) runs on the node. */
export function wireGuardNodeSettings(
  ctx: PortalContext,
  nodeNumber: NodeNumber,
  profileFilter: ReadonlySet<string> | null,
): WireGuardNodeSettings | null {
  const four: string[] = [];
  const six: string[] = [];
  const hostNames = new Set<string>();
  const capacity: { profileId: string; peers: number }[] = [];
  for (const profile of ctx.config.profiles) {
    if (profileFilter !== null && !profileFilter.has(profile.profileId)) continue;
    const node = profile.nodes.find((candidate) => candidate.nodeNumber === nodeNumber);
    if (node?.wireGuard == null) continue;
    hostNames.add(node.hostName);
    const { rangeFour, rangeSix } = node.wireGuard;
    capacity.push({ profileId: profile.profileId, peers: poolCapacity(rangeFour, rangeSix) });
    const gateway = gatewayAddresses(rangeFour, rangeSix);
    four.push(`${gateway.ipFour}/${parseIpPrefix(rangeFour).length}`);
    six.push(`${gateway.ipSix}/${parseIpPrefix(rangeSix).length}`);
  }
  if (four.length === 0) return null;
  const privateKey = ctx.keys.wireGuardPrivateKey(nodeNumber);
  if (privateKey === null)
    throw new PortalError(
      'unavailable',
      `no WireGuard key for node ${nodeNumber} on the portal: run "vpn-portal generate-secrets"`,
    );
  return {
    privateKey,
    listenPort: ctx.config.wireGuard.listenPort,
    mtu: ctx.config.wireGuard.mtu,
    addressList: [...four, ...six],
    capacity,
    proxyGuard: ctx.config.wireGuard.proxy.enabled ? { hostNames: [...hostNames] } : null,
  };
}
