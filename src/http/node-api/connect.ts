// Node API: POST {base}/node-api.php/connect — may this OpenVPN client connect? Answers 200
// with `OK` or `ERR` (reference §1.2); the node refuses the client on anything but `OK`.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { authorizeOpenVpnConnect } from '../../core/sessions/index.js';
import { CONNECT_ALLOWED, CONNECT_REFUSED, connectForm } from '../../protocol/node-api.js';
import { asProfileId } from '../../shared/ids.js';
import { readForm } from '../plumbing/params.js';
import { authenticatedNode } from './node-auth.js';
import { checkTunnelAddresses } from './tunnel-addresses.js';

export async function connectHandler(ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const nodeNumber = authenticatedNode(ctx, request);
  const form = readForm(connectForm, request.body);
  checkTunnelAddresses(ctx.config, nodeNumber, {
    profileId: form.profile_id,
    ipFour: form.ip_four,
    ipSix: form.ip_six,
  });
  // The node's agent waits a while for the answer, then refuses the client and closes the
  // request: a session opened after that would attribute the address to a client never let in.
  const nodeGaveUp = new AbortController();
  const closed = () => {
    if (!reply.raw.writableFinished) nodeGaveUp.abort();
  };
  reply.raw.once('close', closed);
  const decision = await authorizeOpenVpnConnect(ctx, {
    nodeNumber,
    profileId: asProfileId(form.profile_id),
    commonName: form.common_name,
    originatingIp: form.originating_ip ?? null,
    ipFour: form.ip_four,
    ipSix: form.ip_six ?? '',
    reauth: form.reauth === 'yes',
    nodeGaveUp: nodeGaveUp.signal,
  });
  await reply.type('text/plain').send(decision.allowed ? CONNECT_ALLOWED : CONNECT_REFUSED);
}
