// The portal's HTTP surface: the Admin API under {base}/admin/api/v1, its OpenAPI
// document, and the Node API under {base}/node-api.php for node agents.
import formbody from '@fastify/formbody';
import Fastify, { type FastifyRequest } from 'fastify';
import type { PortalContext } from '../core/context.js';
import { AddressAllowList } from './address-allow-list.js';
import { adminGuard } from './admin-guard.js';
import { runRoute } from './admin-route.js';
import { handleError, sendError } from './error-reply.js';
import { connectHandler } from './node-api/connect.js';
import { disconnectHandler } from './node-api/disconnect.js';
import { serverConfigHandler } from './node-api/server-config.js';
import { buildOpenApiDocument } from './openapi.js';
import { ProtocolErrorAnswers } from './protocol-errors.js';
import { adminRoutes } from './routes/index.js';

/** Form bodies of the Admin API are small; anything larger is refused with 413. */
const BODY_LIMIT_BYTES = 64 * 1024;
/** Node's default: a request's headers must arrive within a minute. */
const HEADERS_TIMEOUT_MS = 60_000;

export function buildServer(ctx: PortalContext) {
  const trustedProxies = new AddressAllowList(ctx.config.adminApi.trustedProxyList);
  const adminBase = `${ctx.config.basePath}/admin/api`;
  const adminPrefix = `${adminBase}/v1`;
  const guard = adminGuard(new AddressAllowList(ctx.config.adminApi.allowList), ctx.keys);
  const isUnderAdminBase = (path: string) => path === adminBase || path.startsWith(`${adminBase}/`);
  /**
   * Whether the guard applies. The router matches percent-decoded paths (`/admin/ap%69/v1/users`
   * reaches /users), so the decision follows the matched route, and for unmatched paths both the
   * raw and the decoded path: a spelling of the URL must never skip authentication.
   */
  const isAdminRequest = (request: FastifyRequest): boolean => {
    const routeUrl = request.routeOptions.url;
    if (routeUrl !== undefined && isUnderAdminBase(routeUrl)) return true;
    const path = request.url.split('?')[0] ?? '';
    return isUnderAdminBase(path) || isUnderAdminBase(decodePath(path));
  };
  const protocolErrors = new ProtocolErrorAnswers({ requestTimeoutMs: HEADERS_TIMEOUT_MS, logger: ctx.logger });
  const app = Fastify({
    loggerInstance: ctx.logger,
    // A request without Host gets the JSON 400 of the hook below, not Node's empty one.
    http: { requireHostHeader: false, headersTimeout: HEADERS_TIMEOUT_MS },
    bodyLimit: BODY_LIMIT_BYTES,
    // X-Forwarded-For is believed only when the direct peer is a configured trusted proxy.
    trustProxy: (address: string) => trustedProxies.allows(address),
    exposeHeadRoutes: false,
    // A URL the router cannot decode (`%zz`) still gets the Admin API's guard and error format.
    frameworkErrors: async (error, request, reply) => {
      if (isAdminRequest(request)) await guard(request, reply);
      if (!reply.sent) await sendError(reply, 400, `invalid URL: ${error.message}`);
    },
    // Bytes that are not valid HTTP (bad Content-Length, junk behind a request, ...) get the same JSON error shape.
    clientErrorHandler: protocolErrors.onClientError,
  });
  protocolErrors.install(app.server);
  app.removeAllContentTypeParsers();
  void app.register(formbody, { bodyLimit: BODY_LIMIT_BYTES });
  app.setErrorHandler(handleError);

  app.addHook('onRequest', async (request, reply) => {
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is malformed, whoever sends it.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      await sendError(reply, 400, 'HTTP/1.1 request without "Host" header', { connection: 'close' });
      return;
    }
    if (isAdminRequest(request)) await guard(request, reply);
  });

  /** Method of each Admin API path, for 405 answers to any other method (HEAD, OPTIONS, PROPFIND, ...). */
  const methodOf = new Map<string, string>();
  for (const route of adminRoutes) {
    const url = `${adminPrefix}${route.path}`;
    app.route({ method: route.method, url, handler: (request, reply) => runRoute(route, ctx, request, reply) });
    methodOf.set(url, route.method);
  }

  const openApi = JSON.stringify(buildOpenApiDocument(adminRoutes, new URL('admin/api/v1', withSlash(ctx.config.baseUrl)).href));
  app.get(`${adminPrefix}/openapi.json`, (_request, reply) => reply.type('application/json').send(openApi));
  methodOf.set(`${adminPrefix}/openapi.json`, 'GET');

  const nodeApi = `${ctx.config.basePath}/node-api.php`;
  app.post(`${nodeApi}/server_config`, (request, reply) => serverConfigHandler(ctx, request, reply));
  app.post(`${nodeApi}/connect`, (request, reply) => connectHandler(ctx, request, reply));
  app.post(`${nodeApi}/disconnect`, (request, reply) => disconnectHandler(ctx, request, reply));

  app.setNotFoundHandler((request, reply) => {
    const path = decodePath(request.url.split('?')[0] ?? '');
    const allowed = methodOf.get(path);
    if (allowed !== undefined) return sendError(reply, 405, `method "${request.method}" not allowed`, { allow: allowed });
    const shown = path.startsWith(adminBase) ? path.slice(adminBase.length) : path;
    return sendError(reply, 404, `"${shown}" not found`);
  });
  return app;
}

/** The path as the router sees it; undecodable text is kept as sent. */
function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

function withSlash(url: URL): URL {
  return new URL(url.href.endsWith('/') ? url.href : `${url.href}/`);
}
