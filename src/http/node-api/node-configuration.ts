// Node API: POST {base}/node-api.php/server_config. A node agent authenticates with
// `X-Node-Number` and its node secret (Bearer) and receives what it needs to run its
// WireGuard interface (core/nodes/wireguard-settings.ts) and its OpenVPN server processes
// (core/nodes/openvpn-server-files.ts). The agent names the Unix user and group for OpenVPN, its AES
// preference and where the management sockets go. The wire format is src/protocol/node-api.ts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { openVpnServerFiles, wireGuardNodeSettings } from '../../core/nodes/index.js';
import { serverConfigForm, type ServerConfigAnswer } from '../../protocol/node-api.js';
import { readForm } from '../plumbing/params.js';
import { authenticatedNode } from './node-auth.js';

export async function serverConfigHandler(
  ctx: PortalContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const nodeNumber = authenticatedNode(ctx, request);
  const form = readForm(serverConfigForm, request.body);
  const requested = form.profile_id_list;
  const profileFilter = requested === undefined ? null : new Set(Array.isArray(requested) ? requested : [requested]);
  const openvpn = await openVpnServerFiles(ctx, nodeNumber, profileFilter, {
    vpnUser: form.vpn_user ?? 'nobody',
    vpnGroup: form.vpn_group ?? 'nogroup',
    preferAes: (form.prefer_aes ?? 'yes') === 'yes',
    managementDir: form.management_dir ?? '/run/openvpn-server',
  });
  const answer: ServerConfigAnswer = {
    wireguard: wireGuardNodeSettings(ctx, nodeNumber, profileFilter),
    openvpn: openvpn.map(({ name, profileId, processNumber, proto, port, content }) => ({
      name,
      profileId,
      processNumber,
      proto,
      port,
      content,
    })),
  };
  await reply.type('application/json').send(JSON.stringify(answer));
  // An agent asks at start and after wireguard-go restarted: it may hold no peers now.
  ctx.nodes.nodeCheckedIn(nodeNumber);
}
