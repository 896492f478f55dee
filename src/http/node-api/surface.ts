// The Node API under {base}/node-api.php, for node agents: server_config, connect and
// disconnect. Its guard refuses addresses outside nodeApi.allowList before the body is read;
// each call then authenticates the node (node-auth.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import { sendError } from '../plumbing/error-reply.js';
import { requestsUnder, type HttpSurface } from '../plumbing/surface.js';
import { connectHandler } from './connect.js';
import { disconnectHandler } from './disconnect.js';
import { serverConfigHandler } from './node-configuration.js';

export function nodeApiSurface(ctx: PortalContext): HttpSurface {
  const base = `${ctx.config.basePath}/node-api.php`;
  const allowList = new AddressAllowList(ctx.config.nodeApi.allowList);
  return {
    owns: requestsUnder(base),
    /** Node API calls from elsewhere are refused before their body is read, and the connection closed. */
    async guard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      if (allowList.allows(request.ip)) return;
      request.log.warn({ ip: request.ip }, 'node API request from an address outside nodeApi.allowList');
      await sendError(reply, 403, 'source address not allowed');
    },
    async plugin(app) {
      app.post(`${base}/server_config`, (request, reply) => serverConfigHandler(ctx, request, reply));
      app.post(`${base}/connect`, (request, reply) => connectHandler(ctx, request, reply));
      app.post(`${base}/disconnect`, (request, reply) => disconnectHandler(ctx, request, reply));
    },
    // Another method on a Node API path is answered 404, as any unknown path.
    methods: new Map(),
  };
}
