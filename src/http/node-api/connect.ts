// Node API: POST {base}/node-api.php/connect — may this OpenVPN client connect? Answers 200
// with `OK` or `ERR` (reference §1.2); the node refuses the client on anything but `OK`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { authorizeOpenVpnConnect } from '../../core/openvpn-connections.js';
import { optional, param, readParams, required } from '../params.js';
import { authenticatedNode } from './node-auth.js';

export async function connectHandler(ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const nodeNumber = authenticatedNode(ctx, request);
  const params = readParams('post', request.body, {
    profile_id: required(param.profileId, 'profile of the OpenVPN process the client reached'),
    common_name: required(param.connectionId, 'Common Name of the client certificate'),
    originating_ip: optional(param.ipAddress, 'address the client connects from'),
    ip_four: required(param.ipAddress, 'IPv4 address OpenVPN gave the client'),
    ip_six: optional(param.ipAddress, 'IPv6 address OpenVPN gave the client'),
    reauth: optional(param.yesNo, '`yes` at a TLS renegotiation of a connected client (no new log entry)'),
  });
  const decision = await authorizeOpenVpnConnect(ctx, {
    nodeNumber,
    profileId: params.profile_id,
    commonName: params.common_name,
    originatingIp: params.originating_ip ?? null,
    ipFour: params.ip_four,
    ipSix: params.ip_six ?? '',
    reauth: params.reauth ?? false,
  });
  await reply.type('text/plain').send(decision.allowed ? 'OK' : 'ERR');
}
