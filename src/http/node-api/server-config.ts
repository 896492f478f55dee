// Node API: POST {base}/node-api.php/server_config. A node agent authenticates with
// `X-Node-Number` and its node secret (Bearer) and receives what it needs to run its
// WireGuard interface: private key, listen port, MTU and the gateway address of every
// WireGuard profile range on that node (IPv4 first, then IPv6, as the reference §6.4), and,
// with `WireGuard.enableProxy`, the host names its ProxyGuard relay answers for.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { asNodeNumber, type NodeNumber } from '../../core/ids.js';
import { parseIpPrefix } from '../../net/ip-prefix.js';
import { gatewayAddresses } from '../../wireguard/address-pool.js';
import { HttpError } from '../http-error.js';

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

export async function serverConfigHandler(ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const nodeNumber = authenticatedNode(ctx, request);
  const body = (request.body ?? {}) as Record<string, unknown>;
  const requested = body['profile_id_list'];
  const profileFilter = requested === undefined ? null : new Set(Array.isArray(requested) ? requested : [requested]);
  await reply.type('application/json').send(JSON.stringify({ wireguard: wireGuardServerConfig(ctx, nodeNumber, profileFilter) }));
}

function wireGuardServerConfig(ctx: PortalContext, nodeNumber: NodeNumber, profileFilter: ReadonlySet<unknown> | null): WireGuardServerConfig | null {
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

function authenticatedNode(ctx: PortalContext, request: FastifyRequest): NodeNumber {
  const header = request.headers['x-node-number'];
  const authorization = request.headers.authorization;
  if (typeof header !== 'string' || !/^(0|[1-9]\d{0,5})$/.test(header)) throw new HttpError(400, 'missing or invalid "X-Node-Number" header');
  const nodeNumber = asNodeNumber(Number(header));
  const token = typeof authorization === 'string' && authorization.startsWith('Bearer ') ? authorization.slice(7) : '';
  if (!ctx.keys.nodeKeyMatches(nodeNumber, token)) {
    request.log.warn({ nodeNumber, ip: request.ip }, 'node API: authentication failed');
    throw new HttpError(401, 'authentication required', { 'www-authenticate': 'Bearer realm="Node API"' });
  }
  return nodeNumber;
}

