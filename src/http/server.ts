// The portal's HTTP server: its surfaces — the Admin API under {base}/admin/api/v1 with its
// OpenAPI document (admin-api/surface.ts), the Node API under {base}/node-api.php for node agents
// (node-api/surface.ts), {base}/enroll where devices redeem enrollment tokens (enrollment/),
// {base}/scim/v2 where a directory provisions users and groups (scim/), {base}/mdm/jamf where
// Jamf Pro delivers its webhooks (mdm-push/) —
// each a plugin with its own guard (plumbing/surface.ts), the admin console under {base}/admin/ (a plugin
// that guards its own pages, console/), and what they share: the JSON error shape, 404 and 405.
// Timeouts and limits per address are every listener's (plumbing/listener-budgets.ts).
import formbody from '@fastify/formbody';
import type { FastifyRequest } from 'fastify';
import type { PortalContext } from '../core/context.js';
import { AddressAllowList } from '../net/address-allow-list.js';
import { adminApiSurface } from './admin-api/surface.js';
import type { CertificateCheck } from './enrollment/certificate-check.js';
import { enrollSurface } from './enrollment/enroll.js';
import { handleError, sendError } from './plumbing/error-reply.js';
import { parseFormText } from './plumbing/form-text.js';
import { nodeApiSurface } from './node-api/surface.js';
import { scimSurface } from './scim/surface.js';
import { jamfPushSurface } from './mdm-push/surface.js';
import { JamfPushCounts } from '../core/devices/index.js';
import { BODY_LIMIT_BYTES, budgetedListener } from './plumbing/listener-budgets.js';
import { decodePath, type HttpSurface } from './plumbing/surface.js';
import { adminConsole, consoleNotFound } from './console/plugin.js';

/** `jamfPushCounts`: what the Jamf Pro receiver counts, for the metrics. */
export function buildServer(
  ctx: PortalContext,
  certificateCheck: CertificateCheck | null = null,
  jamfPushCounts: JamfPushCounts = new JamfPushCounts(),
) {
  const jamfPush = ctx.config.mdmPush.jamf;
  const surfaces: readonly HttpSurface[] = [
    // One line each; a request belongs to the first that owns it, and passes its guard first.
    adminApiSurface(ctx),
    nodeApiSurface(ctx),
    enrollSurface(ctx, certificateCheck),
    scimSurface(ctx),
    ...(jamfPush === null ? [] : [jamfPushSurface(ctx, jamfPush, jamfPushCounts)]),
  ];
  const surfaceOf = (request: FastifyRequest): HttpSurface | undefined =>
    surfaces.find((surface) => surface.owns(request));
  const trustedProxies = new AddressAllowList(ctx.config.adminApi.trustedProxyList);
  // Timeouts, the cap per address, the body limit and JSON protocol errors: as on every listener.
  const app = budgetedListener(
    { listen: ctx.config.listen, logger: ctx.logger, uncapped: trustedProxies },
    {
      // X-Forwarded-For is believed only when the direct peer is a configured trusted proxy.
      trustProxy: (address: string) => trustedProxies.allows(address),
      exposeHeadRoutes: false,
      // A URL the router cannot decode (`%zz`) still gets its surface's guard and error format.
      frameworkErrors: async (error, request, reply) => {
        const surface = surfaceOf(request);
        await surface?.guard(request, reply);
        if (reply.sent) return;
        const message = `invalid URL: ${error.message}`;
        await (surface?.refuse === undefined ? sendError(reply, 400, message) : surface.refuse(reply, 400, message));
      },
    },
  );
  app.removeAllContentTypeParsers();
  void app.register(formbody, { bodyLimit: BODY_LIMIT_BYTES, parser: parseFormText });
  app.setErrorHandler(handleError);

  // The guards run here, not in their plugins: a plugin's hooks see only its routes, and a
  // guard must also answer for paths that match none of them, in any spelling.
  app.addHook('onRequest', async (request, reply) => {
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is malformed, whoever sends it.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      await sendError(reply, 400, 'HTTP/1.1 request without "Host" header', { connection: 'close' });
      return;
    }
    await surfaceOf(request)?.guard(request, reply);
  });
  // An answer sent before the request's body arrived (a refusal by a guard) closes the
  // connection: the portal does not read a body it refused, and a slow sender is let go at once.
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.raw.complete && announcesBody(request)) void reply.header('connection', 'close');
    await surfaceOf(request)?.beforeAnswer?.(request, reply.statusCode, payload);
    return payload;
  });

  for (const surface of surfaces) void app.register(surface.plugin);
  // The console's guard is its plugin's own: every console path is one of its routes or its static files.
  if (ctx.config.adminConsole.enabled) void app.register(adminConsole, { ctx });

  /** Method of each known path, for 405 answers to any other method (HEAD, OPTIONS, PROPFIND, ...). */
  const methodOf = new Map(surfaces.flatMap((surface) => [...surface.methods]));
  const consoleBase = `${ctx.config.basePath}/admin/`;
  app.setNotFoundHandler((request, reply) => {
    const path = decodePath(request.url.split('?')[0] ?? '');
    // A console address without a page: the console's own 404 page and headers, not the API's JSON.
    if (ctx.config.adminConsole.enabled && path.startsWith(consoleBase) && surfaceOf(request) === undefined)
      return consoleNotFound(reply, consoleBase);
    const allowed = methodOf.get(path);
    if (allowed !== undefined)
      return sendError(reply, 405, `method "${request.method}" not allowed`, { allow: allowed });
    // The whole path asked for (the reference names it relative to the Admin API, `"/v1/x"`,
    // which hides a wrong baseUrl or prefix).
    return sendError(reply, 404, `"${path}" not found`);
  });
  return app;
}

function announcesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
