// The portal's HTTP surface: the Admin API under {base}/admin/api/v1, its OpenAPI
// document, the admin console under {base}/admin/ (its own plugin and guard, ./console/), the
// Node API under {base}/node-api.php for node agents, and {base}/enroll where devices redeem
// enrollment tokens.
import formbody from '@fastify/formbody';
import Fastify, { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import type { PortalContext } from '../core/context.js';
import { AddressAllowList } from './address-allow-list.js';
import { adminGuard } from './admin-guard.js';
import { AdminRequests, auditedParameters } from './admin-requests.js';
import { runRoute, type RouteServices } from './admin-route.js';
import { IdempotentCalls } from './idempotency.js';
import { AdminKeyUse, recordAdminCall } from '../core/access/index.js';
import { ConnectionsPerAddress } from './connections-per-address.js';
import { handleError, sendError, wasDatabaseOutage } from './error-reply.js';
import { enrollEndpoint } from './enroll.js';
import type { CertificateCheck } from './certificate-check.js';
import { connectHandler } from './node-api/connect.js';
import { disconnectHandler } from './node-api/disconnect.js';
import { serverConfigHandler } from './node-api/server-config.js';
import { buildOpenApiDocument } from './openapi.js';
import { ProtocolErrorAnswers } from './protocol-errors.js';
import { RunningRequests } from './running-requests.js';
import { adminRoutes } from './routes/index.js';
import { adminConsole } from './console/plugin.js';
import { ENROLL_PATH } from '../protocol/admin-api.js';

/** Form bodies of the Admin API are small; anything larger is refused with 413. */
const BODY_LIMIT_BYTES = 64 * 1024;
/** How often Node looks for requests past listen.requestTimeout (its default, 30 s, would let them linger). */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

export function buildServer(ctx: PortalContext, certificateCheck: CertificateCheck | null = null) {
  const trustedProxies = new AddressAllowList(ctx.config.adminApi.trustedProxyList);
  const adminBase = `${ctx.config.basePath}/admin/api`;
  const adminPrefix = `${adminBase}/v1`;
  const nodeApi = `${ctx.config.basePath}/node-api.php`;
  const requests = new AdminRequests();
  const services: RouteServices = { requests, idempotent: new IdempotentCalls(ctx) };
  const guard = adminGuard({ ctx, allowList: new AddressAllowList(ctx.config.adminApi.allowList), requests, keyUse: new AdminKeyUse(ctx) });
  const nodeApiAllowList = new AddressAllowList(ctx.config.nodeApi.allowList);
  const enrollPath = `${ctx.config.basePath}/${ENROLL_PATH}`;
  const enroll = enrollEndpoint(ctx, certificateCheck);
  const isAdminRequest = requestsUnder(adminBase);
  const isNodeApiRequest = requestsUnder(nodeApi);
  const isEnrollRequest = requestsUnder(enrollPath);
  /** Node API calls from elsewhere are refused before their body is read, and the connection closed. */
  const nodeApiGuard = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (nodeApiAllowList.allows(request.ip)) return;
    request.log.warn({ ip: request.ip }, 'node API request from an address outside nodeApi.allowList');
    await sendError(reply, 403, 'source address not allowed');
  };
  const { listen } = ctx.config;
  const running = new RunningRequests();
  const protocolErrors = new ProtocolErrorAnswers({ requestTimeoutMs: listen.requestTimeoutMs, running, logger: ctx.logger });
  const app = Fastify({
    loggerInstance: ctx.logger,
    // One line per request at info is noise and cost: one line at debug instead.
    logController: new DebugRequestLog(),
    http: {
      // A request without Host gets the JSON 400 of the hook below, not Node's empty one.
      requireHostHeader: false,
      // Slow senders are cut with 408: headers and body alike must arrive within requestTimeout.
      headersTimeout: listen.requestTimeoutMs,
      requestTimeout: listen.requestTimeoutMs,
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    // Fastify sets these on the server after creating it (its defaults: no request timeout, 72 s keep-alive).
    requestTimeout: listen.requestTimeoutMs,
    keepAliveTimeout: listen.keepAliveTimeoutMs,
    bodyLimit: BODY_LIMIT_BYTES,
    // X-Forwarded-For is believed only when the direct peer is a configured trusted proxy.
    trustProxy: (address: string) => trustedProxies.allows(address),
    exposeHeadRoutes: false,
    // A URL the router cannot decode (`%zz`) still gets the Admin API's guard and error format.
    frameworkErrors: async (error, request, reply) => {
      if (isAdminRequest(request)) await guard(request, reply);
      else if (isNodeApiRequest(request)) await nodeApiGuard(request, reply);
      else if (isEnrollRequest(request)) await enroll.guard(request, reply);
      if (!reply.sent) await sendError(reply, 400, `invalid URL: ${error.message}`);
    },
    // Bytes that are not valid HTTP (bad Content-Length, junk behind a request, ...) get the same JSON error shape.
    clientErrorHandler: protocolErrors.onClientError,
  });
  running.install(app.server);
  protocolErrors.install(app.server);
  // Node stops timing out slow requests once the server closes, and the close waits for every
  // connection: answer what has arrived, then drop the rest (slow senders, idle keep-alives).
  app.addHook('preClose', async () => {
    void running.answered().then(() => app.server.closeAllConnections());
  });
  new ConnectionsPerAddress({ maxPerAddress: listen.maxConnectionsPerAddress, uncapped: trustedProxies, logger: ctx.logger }).install(app.server);
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
    else if (isNodeApiRequest(request)) await nodeApiGuard(request, reply);
    else if (isEnrollRequest(request)) await enroll.guard(request, reply);
  });
  // An answer sent before the request's body arrived (a refusal by a guard) closes the
  // connection: the portal does not read a body it refused, and a slow sender is let go at once.
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.raw.complete && announcesBody(request)) void reply.header('connection', 'close');
    if (isAdminRequest(request)) await recordUnchangedCall(request, reply.statusCode, payload);
    return payload;
  });

  /**
   * The audit log of the calls that changed nothing: every refusal (401, 403), and every POST
   * of a known caller that failed, was answered from a kept answer, or had nothing to do. A
   * call that changed something was recorded in its own transaction already (events seam).
   * Recorded before the answer leaves; a database that cannot record it is logged, and the
   * answer stands. A call the database could not serve (503) is not recorded: the write would
   * fail the same way after waiting as long again, and the call changed nothing.
   */
  async function recordUnchangedCall(request: FastifyRequest, status: number, payload: unknown): Promise<void> {
    const state = requests.get(request);
    if (state === undefined || (state.events?.changesRecorded ?? 0) > 0 || wasDatabaseOutage(request)) return;
    const refused = status === 401 || status === 403;
    if (!refused && !(request.method === 'POST' && state.caller.scope !== null)) return;
    const route = routeOf.get(request.routeOptions.url ?? '');
    const name = route?.path.slice(1) ?? decodePath(request.url.split('?')[0] ?? '').replace(`${adminPrefix}/`, '');
    const input = route === undefined ? {} : (route.input?.(request) ?? (route.source === 'query' ? request.query : request.body));
    const parameters = auditedParameters(route === undefined ? [] : Object.keys(route.params), input, request);
    // The guard's reason (the client is told less on 401), a replay's note, or the answer's error.
    const detail = state.detail ?? (status >= 400 ? errorOf(payload) : null);
    const call = { caller: state.caller, name, parameters, successStatus: route?.success.status ?? 200 };
    await recordAdminCall(ctx, call, status, detail).catch((error: unknown) =>
      request.log.error({ err: error, call: name, status }, 'could not record an Admin API call in the audit log'),
    );
  }

  /** Method of each Admin API path, for 405 answers to any other method (HEAD, OPTIONS, PROPFIND, ...). */
  const methodOf = new Map<string, string>();
  const routeOf = new Map<string, (typeof adminRoutes)[number]>();
  for (const route of adminRoutes) {
    const url = `${adminPrefix}${route.path}`;
    app.route({ method: route.method, url, handler: (request, reply) => runRoute(route, ctx, services, request, reply) });
    methodOf.set(url, route.method);
    routeOf.set(url, route);
  }

  const openApi = JSON.stringify(buildOpenApiDocument(adminRoutes, new URL('admin/api/v1', withSlash(ctx.config.baseUrl)).href));
  app.get(`${adminPrefix}/openapi.json`, (_request, reply) => reply.type('application/json').send(openApi));
  methodOf.set(`${adminPrefix}/openapi.json`, 'GET');

  if (ctx.config.adminConsole.enabled) void app.register(adminConsole, { ctx });

  app.post(enrollPath, (request, reply) => enroll.handle(request, reply));
  methodOf.set(enrollPath, 'POST');

  app.post(`${nodeApi}/server_config`, (request, reply) => serverConfigHandler(ctx, request, reply));
  app.post(`${nodeApi}/connect`, (request, reply) => connectHandler(ctx, request, reply));
  app.post(`${nodeApi}/disconnect`, (request, reply) => disconnectHandler(ctx, request, reply));

  app.setNotFoundHandler((request, reply) => {
    const path = decodePath(request.url.split('?')[0] ?? '');
    const allowed = methodOf.get(path);
    if (allowed !== undefined) return sendError(reply, 405, `method "${request.method}" not allowed`, { allow: allowed });
    // The whole path asked for (the reference names it relative to the Admin API, `"/v1/x"`,
    // which hides a wrong baseUrl or prefix).
    return sendError(reply, 404, `"${path}" not found`);
  });
  return app;
}

/** Fastify's request lines: none when a request arrives, one at debug when it is answered; errors as Fastify logs them. */
class DebugRequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error !== null && error !== undefined) {
      super.requestCompleted(error, request, reply);
      return;
    }
    request.log.debug(
      { method: request.method, url: request.url, statusCode: reply.statusCode, responseTimeMs: Math.round(reply.elapsedTime) },
      'request answered',
    );
  }
}

/**
 * Whether a request is for `base` or below. The router matches percent-decoded paths
 * (`/admin/ap%69/v1/users` reaches /users), so the decision follows the matched route, and for
 * unmatched paths both the raw and the decoded path: a spelling of the URL must never skip a guard.
 */
function requestsUnder(base: string): (request: FastifyRequest) => boolean {
  const isUnder = (path: string): boolean => path === base || path.startsWith(`${base}/`);
  return (request) => {
    const routeUrl = request.routeOptions.url;
    if (routeUrl !== undefined && isUnder(routeUrl)) return true;
    const path = request.url.split('?')[0] ?? '';
    return isUnder(path) || isUnder(decodePath(path));
  };
}

/** The message of a JSON error answer. */
function errorOf(payload: unknown): string | null {
  if (typeof payload !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(payload);
    return typeof parsed === 'object' && parsed !== null && typeof (parsed as { error?: unknown }).error === 'string'
      ? (parsed as { error: string }).error
      : null;
  } catch {
    return null;
  }
}

function announcesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
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
