// The portal's HTTP surface: the Admin API under {base}/admin/api/v1, its OpenAPI
// document, and the Node API under {base}/node-api.php for node agents.
import formbody from '@fastify/formbody';
import Fastify, { type HTTPMethods } from 'fastify';
import type { PortalContext } from '../core/context.js';
import { AddressAllowList } from './address-allow-list.js';
import { adminGuard } from './admin-guard.js';
import { runRoute } from './admin-route.js';
import { handleError, sendError } from './error-reply.js';
import { serverConfigHandler } from './node-api/server-config.js';
import { buildOpenApiDocument } from './openapi.js';
import { adminRoutes } from './routes/index.js';

/** Form bodies of the Admin API are small; anything larger is refused with 413. */
const BODY_LIMIT_BYTES = 64 * 1024;
const ALL_METHODS: readonly HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

export function buildServer(ctx: PortalContext) {
  const trustedProxies = new AddressAllowList(ctx.config.adminApi.trustedProxyList);
  const app = Fastify({
    loggerInstance: ctx.logger,
    bodyLimit: BODY_LIMIT_BYTES,
    // X-Forwarded-For is believed only when the direct peer is a configured trusted proxy.
    trustProxy: (address: string) => trustedProxies.allows(address),
    exposeHeadRoutes: false,
  });
  app.removeAllContentTypeParsers();
  void app.register(formbody, { bodyLimit: BODY_LIMIT_BYTES });
  app.setErrorHandler(handleError);

  const adminBase = `${ctx.config.basePath}/admin/api`;
  const adminPrefix = `${adminBase}/v1`;
  const guard = adminGuard(new AddressAllowList(ctx.config.adminApi.allowList), ctx.keys);
  app.addHook('onRequest', async (request, reply) => {
    if (request.url === adminBase || request.url.startsWith(`${adminBase}/`) || request.url.startsWith(`${adminBase}?`)) {
      await guard(request, reply);
    }
  });

  for (const route of adminRoutes) {
    const url = `${adminPrefix}${route.path}`;
    app.route({ method: route.method, url, handler: (request, reply) => runRoute(route, ctx, request, reply) });
    app.route({
      method: ALL_METHODS.filter((method) => method !== route.method),
      url,
      handler: (request, reply) => sendError(reply, 405, `method "${request.method}" not allowed`, { allow: route.method }),
    });
  }

  const openApi = JSON.stringify(buildOpenApiDocument(adminRoutes, new URL('admin/api/v1', withSlash(ctx.config.baseUrl)).href));
  app.get(`${adminPrefix}/openapi.json`, (_request, reply) => reply.type('application/json').send(openApi));

  app.post(`${ctx.config.basePath}/node-api.php/server_config`, (request, reply) => serverConfigHandler(ctx, request, reply));

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const shown = path.startsWith(adminBase) ? path.slice(adminBase.length) : path;
    return sendError(reply, 404, `"${shown}" not found`);
  });
  return app;
}

function withSlash(url: URL): URL {
  return new URL(url.href.endsWith('/') ? url.href : `${url.href}/`);
}
