// The Admin API under {base}/admin/api/v1, and its OpenAPI document: the guard (allow-list,
// then the key) runs before routing, so an unauthenticated client learns nothing about which
// paths exist; each call runs by its route definition (admin-route.ts); every answer that
// changed nothing — refusals, failed or replayed POSTs, look-ups of people by address — is
// recorded in the audit log as it leaves.
import type { FastifyRequest } from 'fastify';
import { AdminKeyUse, recordAdminCall, recordLookup } from '../../core/access/index.js';
import { callerScope } from '../../core/admin-call.js';
import { successStatusOf } from '../../protocol/admin-api.js';
import type { PortalContext } from '../../core/context.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import { adminGuard } from './admin-guard.js';
import { AdminRequests, auditedParameters } from './admin-requests.js';
import { runRoute, usersNamedIn, type AdminRoute, type RouteServices } from './admin-route.js';
import { wasDatabaseOutage } from '../plumbing/error-reply.js';
import { IdempotentCalls } from './idempotency.js';
import { buildOpenApiDocument } from './openapi.js';
import { adminRoutes } from './routes/index.js';
import { decodePath, requestsUnder, type HttpSurface } from '../plumbing/surface.js';

export function adminApiSurface(ctx: PortalContext): HttpSurface {
  const adminBase = `${ctx.config.basePath}/admin/api`;
  const adminPrefix = `${adminBase}/v1`;
  const requests = new AdminRequests();
  const services: RouteServices = { requests, idempotent: new IdempotentCalls(ctx) };
  const guard = adminGuard({
    ctx,
    allowList: new AddressAllowList(ctx.config.adminApi.allowList),
    requests,
    keyUse: new AdminKeyUse(ctx),
  });
  const routeOf = new Map<string, AdminRoute>(adminRoutes.map((route) => [`${adminPrefix}${route.path}`, route]));
  const openApiPath = `${adminPrefix}/openapi.json`;

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
    const route = routeOf.get(request.routeOptions.url ?? '');
    // Most answers are successful reads, which are not recorded: nothing more to work out for them.
    if (!refused && request.method !== 'POST' && route?.lookupOfPeople === undefined) return;
    const name = route?.path.slice(1) ?? decodePath(request.url.split('?')[0] ?? '').replace(`${adminPrefix}/`, '');
    const input =
      route === undefined ? {} : (route.input?.(request) ?? (route.source === 'query' ? request.query : request.body));
    const parameters = auditedParameters(route === undefined ? [] : Object.keys(route.params.shape), input, request);
    const known = callerScope(state.caller) !== null;
    // A look-up of people by address that was made (not refused for its input) is recorded whatever it found.
    const lookup = known && !refused && status !== 400 && route?.lookupOfPeople?.(parameters) === true;
    if (!refused && !lookup && !(request.method === 'POST' && known)) return;
    // The guard's reason (the client is told less on 401), a replay's note, or the answer's error.
    const detail = state.detail ?? (status >= 400 ? errorOf(payload) : null);
    const call = {
      caller: state.caller,
      name,
      parameters,
      successStatus: route === undefined ? 200 : successStatusOf(route.answer),
    };
    const recording = lookup
      ? recordLookup(ctx, call, status, detail, status === 200 ? usersNamedIn(jsonOf(payload)) : [])
      : recordAdminCall(ctx, call, status, detail);
    await recording.catch((error: unknown) =>
      request.log.error({ err: error, call: name, status }, 'could not record an Admin API call in the audit log'),
    );
  }

  return {
    owns: requestsUnder(adminBase),
    guard,
    beforeAnswer: recordUnchangedCall,
    async plugin(app) {
      for (const [url, route] of routeOf) {
        app.route({
          method: route.method,
          url,
          handler: (request, reply) => runRoute(route, ctx, services, request, reply),
        });
      }
      // Built at its first request, not at every start: some 30 ms of CPU that most starts never need.
      let openApi: string | undefined;
      app.get(openApiPath, (_request, reply) => {
        openApi ??= JSON.stringify(
          buildOpenApiDocument(adminRoutes, new URL('admin/api/v1', withSlash(ctx.config.baseUrl)).href),
        );
        return reply.type('application/json').send(openApi);
      });
    },
    methods: new Map([
      ...[...routeOf].map(([url, route]): [string, string] => [url, route.method]),
      [openApiPath, 'GET'],
    ]),
  };
}

/** A JSON answer's value; null for any other payload. */
function jsonOf(payload: unknown): unknown {
  if (typeof payload !== 'string') return null;
  try {
    return JSON.parse(payload) as unknown;
  } catch {
    return null;
  }
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

function withSlash(url: URL): URL {
  return new URL(url.href.endsWith('/') ? url.href : `${url.href}/`);
}
