// The SCIM 2.0 service provider at {baseUrl}scim/v2/ (RFC 7644), for a directory's provisioning
// client (Entra ID, Okta): the discovery resources (ServiceProviderConfig, ResourceTypes,
// Schemas), /Users and /Groups. Its own guard (scim-guard.ts: `scim.allowList`, an admin key of
// scope scim), its own body parser (application/scim+json, and application/json as clients also
// send; up to SCIM_BODY_LIMIT_BYTES) and its own error format (scim-reply.ts), also for paths
// and methods it does not serve.
import type { FastifyInstance } from 'fastify';
import type { AdminCaller } from '../../core/admin-call.js';
import type { PortalContext } from '../../core/context.js';
import {
  listResponse,
  resourceTypes,
  SCIM_CONTENT_TYPE,
  schemaDefinitions,
  ScimProblem,
  serviceProviderConfig,
} from '../../protocol/scim.js';
import { addJsonBodyParser } from '../plumbing/json-body.js';
import { requestsUnder, type HttpSurface } from '../plumbing/surface.js';
import { groupRoutes } from './groups.js';
import { idOf } from './scim-call.js';
import { scimGuard } from './scim-guard.js';
import { handleScimError, sendScim, sendScimError } from './scim-reply.js';
import { userRoutes } from './users.js';

/**
 * The largest request body: a group of 50,000 members is 2.5–10 MB (an id each, a display name,
 * a `$ref`), far above the listener's 64 KiB. Read only once the guard accepted the key; a
 * larger body is refused with 413 before it is read.
 */
export const SCIM_BODY_LIMIT_BYTES = 16 * 1024 * 1024;

export function scimSurface(ctx: PortalContext): HttpSurface {
  const base = new URL(
    'scim/v2/',
    ctx.config.baseUrl.href.endsWith('/') ? ctx.config.baseUrl : `${ctx.config.baseUrl.href}/`,
  );
  const prefix = `${ctx.config.basePath}/scim/v2`;
  const callers = new WeakMap<Parameters<HttpSurface['guard']>[0], AdminCaller>();
  return {
    owns: requestsUnder(prefix),
    guard: scimGuard(ctx, callers, prefix),
    async plugin(app) {
      addJsonBodyParser(
        app,
        [SCIM_CONTENT_TYPE, 'application/json'],
        (message) => new ScimProblem(400, 'invalidSyntax', message),
        { bodyLimit: SCIM_BODY_LIMIT_BYTES },
      );
      app.setErrorHandler(handleScimError);
      discoveryRoutes(app, base);
      userRoutes(app, ctx, callers, base);
      groupRoutes(app, ctx, callers, base);
      // Any other path below the prefix: a SCIM 404, not the Admin API's JSON.
      app.all(`${prefix}/*`, (request, reply) =>
        sendScimError(reply, 404, null, `"${request.url.split('?')[0] ?? ''}" is not a SCIM endpoint of this portal`),
      );
    },
    methods: new Map(),
  };
}

function discoveryRoutes(app: FastifyInstance, base: URL): void {
  const root = base.href.replace(/\/$/, '');
  const types = resourceTypes(root);
  const schemas = schemaDefinitions(root);
  const one = (list: readonly Record<string, unknown>[], id: string): Record<string, unknown> => {
    const found = list.find((entry) => entry['id'] === id);
    if (found === undefined) throw new ScimProblem(404, null, `no such resource "${id}"`);
    return found;
  };
  app.get(`${base.pathname}ServiceProviderConfig`, (_request, reply) =>
    sendScim(reply, 200, serviceProviderConfig(`${root}/ServiceProviderConfig`)),
  );
  app.get(`${base.pathname}ResourceTypes`, (_request, reply) =>
    sendScim(reply, 200, listResponse(types, types.length, 1)),
  );
  app.get(`${base.pathname}ResourceTypes/:id`, (request, reply) => sendScim(reply, 200, one(types, idOf(request))));
  app.get(`${base.pathname}Schemas`, (_request, reply) =>
    sendScim(reply, 200, listResponse(schemas, schemas.length, 1)),
  );
  app.get(`${base.pathname}Schemas/:id`, (request, reply) => sendScim(reply, 200, one(schemas, idOf(request))));
}
