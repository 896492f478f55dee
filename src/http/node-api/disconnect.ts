// Node API: POST {base}/node-api.php/disconnect — an OpenVPN client went away; its
// connection log entry is closed with the byte counts. Always `OK` (reference §1.2).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { recordOpenVpnDisconnect } from '../../core/sessions/index.js';
import { disconnectForm } from '../../protocol/node-api.js';
import { readForm } from '../plumbing/params.js';
import { authenticatedNode } from './node-auth.js';
import { checkTunnelAddresses } from './tunnel-addresses.js';

export async function disconnectHandler(
  ctx: PortalContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const nodeNumber = authenticatedNode(ctx, request);
  const form = readForm(disconnectForm, request.body);
  if (form.profile_id !== undefined)
    checkTunnelAddresses(ctx.config, nodeNumber, {
      profileId: form.profile_id,
      ipFour: form.ip_four,
      ipSix: form.ip_six,
    });
  await recordOpenVpnDisconnect(ctx, {
    nodeNumber,
    commonName: form.common_name,
    bytesIn: Number(form.bytes_in),
    bytesOut: Number(form.bytes_out),
    ...(form.ip_four === undefined ? {} : { ipFour: form.ip_four }),
    ...(form.age_ms === undefined ? {} : { ageMs: Number(form.age_ms) }),
  });
  await reply.type('text/plain').send('OK');
}
