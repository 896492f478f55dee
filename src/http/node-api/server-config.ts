// Node API: POST {base}/node-api.php/server_config. A node agent authenticates with
// `X-Node-Number` and its node secret (Bearer) and receives what it needs to run its
// WireGuard interface: private key, listen port, MTU and the gateway address of every
// WireGuard profile range on that node (IPv4 first, then IPv6, as the reference §6.4), and,
// with `WireGuard.enableProxy`, the host names its ProxyGuard relay answers for; and the
// OpenVPN server files of its OpenVPN profiles (reference §8.4). The agent names the Unix user
// and group for OpenVPN, its AES preference and where the management sockets go.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import type { NodeNumber } from '../../shared/ids.js';
import { openVpnServerFiles } from '../../core/openvpn-server-files.js';
import { parseIpPrefix } from '../../net/ip-prefix.js';
import { gatewayAddresses } from '../../wireguard/address-pool.js';
import { HttpError } from '../http-error.js';
import { optional, param, readParams } from '../params.js';
import { authenticatedNode } from './node-auth.js';

export interface WireGuardServerConfig {
  readonly privateKey: string;
  readonly listenPort: number;
  readonly mtu: number | null;
  readonly addressList: readonly string[];
  /** Null unless WireGuard over TCP is enabled: then the node runs a ProxyGuard relay. */
  readonly proxyGuard: ProxyGuardServerConfig | null;
}

export interface ProxyGuardServerConfig {
  /**
   * The node's `hostName` in every profile it serves: client files name the relay
   * `…/proxyguard/<hostName>`, and the relay refuses paths for other nodes (404).
   */
  readonly hostNames: readonly string[];
}

/** One OpenVPN server process's configuration file. */
export interface OpenVpnServerConfigFile {
  readonly name: string;
  readonly profileId: string;
  readonly processNumber: number;
  readonly proto: 'udp' | 'tcp';
  readonly port: number;
  readonly content: string;
}

export interface NodeServerConfigAnswer {
  readonly wireguard: WireGuardServerConfig | null;
  readonly openvpn: readonly OpenVpnServerConfigFile[];
}

export async function serverConfigHandler(ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const nodeNumber = authenticatedNode(ctx, request);
  const body = (request.body ?? {}) as Record<string, unknown>;
  const requested = body['profile_id_list'];
  const profileFilter = requested === undefined ? null : new Set((Array.isArray(requested) ? requested : [requested]).map(String));
  const params = readParams('post', body, {
    vpn_user: optional(param.unixName, 'Unix user the OpenVPN processes run as'),
    vpn_group: optional(param.unixName, 'Unix group the OpenVPN processes run as'),
    prefer_aes: optional(param.yesNo, 'whether the node has AES instructions'),
    management_dir: optional(param.absolutePath, 'folder of the OpenVPN management sockets'),
  });
  const openvpn = await openVpnServerFiles(ctx, nodeNumber, profileFilter, {
    vpnUser: params.vpn_user ?? 'nobody',
    vpnGroup: params.vpn_group ?? 'nogroup',
    preferAes: params.prefer_aes ?? true,
    managementDir: params.management_dir ?? '/run/openvpn-server',
  });
  const answer: NodeServerConfigAnswer = {
    wireguard: wireGuardServerConfig(ctx, nodeNumber, profileFilter),
    openvpn: openvpn.map(({ name, profileId, processNumber, proto, port, content }) => ({ name, profileId, processNumber, proto, port, content })),
  };
  await reply.type('application/json').send(JSON.stringify(answer));
  // An agent asks at start and after wireguard-go restarted: it may hold no peers now.
  ctx.nodes.nodeCheckedIn(nodeNumber);
}

function wireGuardServerConfig(ctx: PortalContext, nodeNumber: NodeNumber, profileFilter: ReadonlySet<string> | null): WireGuardServerConfig | null {
  const four: string[] = [];
  const six: string[] = [];
  const hostNames = new Set<string>();
  for (const profile of ctx.config.profiles) {
    if (profileFilter !== null && !profileFilter.has(profile.profileId)) continue;
    const node = profile.nodes.find((candidate) => candidate.nodeNumber === nodeNumber);
    if (node?.wireGuard == null) continue;
    hostNames.add(node.hostName);
    const { rangeFour, rangeSix } = node.wireGuard;
    const gateway = gatewayAddresses(rangeFour, rangeSix);
    four.push(`${gateway.ipFour}/${parseIpPrefix(rangeFour).length}`);
    six.push(`${gateway.ipSix}/${parseIpPrefix(rangeSix).length}`);
  }
  if (four.length === 0) return null;
  const privateKey = ctx.keys.wireGuardPrivateKey(nodeNumber);
  if (privateKey === null) throw new HttpError(503, `no WireGuard key for node ${nodeNumber} on the portal: run "vpn-portal generate-secrets"`);
  return {
    privateKey,
    listenPort: ctx.config.wireGuard.listenPort,
    mtu: ctx.config.wireGuard.mtu,
    addressList: [...four, ...six],
    proxyGuard: ctx.config.wireGuard.proxy.enabled ? { hostNames: [...hostNames] } : null,
  };
}
