// Node API: POST {base}/node-api.php/disconnect — an OpenVPN client went away; its
// connection log entry is closed with the byte counts. Always `OK` (reference §1.2).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { recordOpenVpnDisconnect } from '../../core/openvpn-connections.js';
import { param, readParams, required } from '../params.js';
import { authenticatedNode } from './node-auth.js';

export async function disconnectHandler(ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const nodeNumber = authenticatedNode(ctx, request);
  const params = readParams('post', request.body, {
    common_name: required(param.connectionId, 'Common Name of the client certificate'),
    bytes_in: required(param.byteCount, 'bytes received from the client'),
    bytes_out: required(param.byteCount, 'bytes sent to the client'),
  });
  await recordOpenVpnDisconnect(ctx, { nodeNumber, commonName: params.common_name, bytesIn: params.bytes_in, bytesOut: params.bytes_out });
  await reply.type('text/plain').send('OK');
}
