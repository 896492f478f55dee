// The SCIM 2.0 service provider at {baseUrl}scim/v2/ (RFC 7644), for a directory's provisioning
// client (Entra ID, Okta): the discovery resources (ServiceProviderConfig, ResourceTypes,
// Schemas), /Users and /Groups. Its own guard (scim-guard.ts: `scim.allowList`, an admin key of
// scope scim), its own body parser (application/scim+json, and application/json as clients also
// send; up to SCIM_BODY_LIMIT_BYTES, a User's up to SCIM_USER_BODY_LIMIT_BYTES (users.ts), one
// body above SCIM_LARGE_BODY_BYTES at a time) and its own error format (scim-reply.ts), also for
// paths and methods it does not serve. A change request that changed nothing is recorded in the
// audit log as its answer leaves (scim-call.ts).
import type { FastifyInstance } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import {
  assertStorableText,
  listResponse,
  resourceTypes,
  SCIM_CONTENT_TYPE,
  schemaDefinitions,
  ScimProblem,
  serviceProviderConfig,
} from '../../protocol/scim.js';
import { addJsonBodyParser } from '../plumbing/json-body.js';
import { addLargeBodyGate } from '../plumbing/large-body-gate.js';
import { requestsUnder, type HttpSurface } from '../plumbing/surface.js';
import { groupRoutes } from './groups.js';
import { idOf, type ScimRequests, unchangedCallRecorder } from './scim-call.js';
import { scimGuard } from './scim-guard.js';
import { handleScimError, sendScim, sendScimError } from './scim-reply.js';
import { userRoutes } from './users.js';

/**
 * The largest request body: a group of its most members (100,000) is 4.9 MB in Entra ID's form
 * (`{"value":"<uuid>"}` each) and 10 MB in Okta's (with `display` an address of 25 characters
 * and `type`), measured; 12 MiB leaves room for display names of some 45 characters. Read only
 * once the guard accepted the key; a larger body is refused with 413 before it is read.
 */
export const SCIM_BODY_LIMIT_BYTES = 12 * 1024 * 1024;
/** Bodies above this (the listener's own limit elsewhere) take turns: one at a time per portal. */
export const SCIM_LARGE_BODY_BYTES = 64 * 1024;
/** How long a large body waits for its turn before a 503. */
export const SCIM_LARGE_BODY_WAIT_MS = 2_000;
/** What that 503's Retry-After says: about the time a group of 100,000 members takes. */
export const SCIM_RETRY_AFTER_SECONDS = 5;

export function scimSurface(ctx: PortalContext): HttpSurface {
  const base = new URL(
    'scim/v2/',
    ctx.config.baseUrl.href.endsWith('/') ? ctx.config.baseUrl : `${ctx.config.baseUrl.href}/`,
  );
  const prefix = `${ctx.config.basePath}/scim/v2`;
  const requests: ScimRequests = { callers: new WeakMap(), calls: new WeakMap() };
  return {
    owns: requestsUnder(prefix),
    guard: scimGuard(ctx, requests.callers, prefix),
    refuse: (reply, status, message) => sendScimError(reply, status, null, message),
    beforeAnswer: unchangedCallRecorder(ctx, requests, prefix),
    async plugin(app) {
      // The server's form parser is not for SCIM: a form is a 415 as any other type but JSON.
      app.removeContentTypeParser('application/x-www-form-urlencoded');
      addJsonBodyParser(
        app,
        [SCIM_CONTENT_TYPE, 'application/json'],
        (message) => new ScimProblem(400, 'invalidSyntax', message),
        { bodyLimit: SCIM_BODY_LIMIT_BYTES },
      );
      addLargeBodyGate(app, {
        thresholdBytes: SCIM_LARGE_BODY_BYTES,
        waitMs: SCIM_LARGE_BODY_WAIT_MS,
        retryAfterSeconds: SCIM_RETRY_AFTER_SECONDS,
        busy: () => new ScimProblem(503, null, 'another large request is being processed; try again shortly'),
      });
      // Text no database stores as sent (a NUL, a lone surrogate): a body with it anywhere is refused before it is read.
      app.addHook('preValidation', async (request) => {
        if (request.body !== undefined) assertStorableText(request.body);
      });
      app.setErrorHandler(handleScimError);
      discoveryRoutes(app, base);
      userRoutes(app, ctx, requests, base);
      groupRoutes(app, ctx, requests, base);
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
