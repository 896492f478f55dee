// The SCIM `/Users` endpoint: create, read, list (`filter=userName eq "…"` or `externalId eq
// "…"`, paged), replace, patch (Entra ID's and Okta's forms) and delete, on the directory
// feature (src/core/directory/). A filter that finds nobody is an empty list, never a 404.
import type { FastifyInstance } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import {
  createDirectoryUser,
  deleteDirectoryUser,
  directoryUser,
  directoryUsers,
  patchDirectoryUser,
  replaceDirectoryUser,
  type DirectoryUserChange,
} from '../../core/directory/index.js';
import {
  listResponse,
  patchUser,
  readListQuery,
  readUser,
  USER_FILTERABLE,
  userResource,
} from '../../protocol/scim.js';
import { idOf, receiptHeaders, scimCallContext, type ScimRequests } from './scim-call.js';
import { sendScim } from './scim-reply.js';

/** The largest body of a User: twice what the portal keeps of one (MAX_USER_ATTRIBUTES_BYTES). */
export const SCIM_USER_BODY_LIMIT_BYTES = 128 * 1024;

export function userRoutes(app: FastifyInstance, ctx: PortalContext, requests: ScimRequests, base: URL): void {
  const location = (id: string): string => `${base.href}Users/${id}`;
  const callCtx = (request: Parameters<typeof idOf>[0], parameters: Record<string, string>) =>
    scimCallContext(ctx, requests, request, 'Users', parameters);
  const answer = (change: DirectoryUserChange) => userResource(change.user, location(change.user.id));
  const path = `${base.pathname}Users`;

  app.get(path, async (request, reply) => {
    const query = readListQuery(request.query, USER_FILTERABLE);
    const filter =
      query.filter === null
        ? null
        : {
            attribute: query.filter.attribute === 'userName' ? ('userName' as const) : ('externalId' as const),
            value: query.filter.value,
          };
    const page = await directoryUsers(ctx, filter, query.startIndex, query.count);
    const resources = page.users.map((user) => userResource(user, location(user.id)));
    return sendScim(reply, 200, listResponse(resources, page.total, query.startIndex));
  });
  app.post(path, { bodyLimit: SCIM_USER_BODY_LIMIT_BYTES }, async (request, reply) => {
    const input = readUser(request.body);
    const change = await createDirectoryUser(callCtx(request, { user_id: input.userName }), input);
    return sendScim(reply, 201, answer(change), {
      location: location(change.user.id),
      ...receiptHeaders(change.revocationIds),
    });
  });
  app.get(`${path}/:id`, async (request, reply) => {
    const user = await directoryUser(ctx, idOf(request));
    return sendScim(reply, 200, userResource(user, location(user.id)));
  });
  app.put(`${path}/:id`, { bodyLimit: SCIM_USER_BODY_LIMIT_BYTES }, async (request, reply) => {
    const current = await directoryUser(ctx, idOf(request));
    const input = readUser(request.body, current);
    const change = await replaceDirectoryUser(callCtx(request, parametersOf(current)), current.id, input);
    return sendScim(reply, 200, answer(change), receiptHeaders(change.revocationIds));
  });
  app.patch(`${path}/:id`, { bodyLimit: SCIM_USER_BODY_LIMIT_BYTES }, async (request, reply) => {
    const current = await directoryUser(ctx, idOf(request));
    // Applied in the change's transaction to the user as stored then, not to `current`.
    const change = await patchDirectoryUser(callCtx(request, parametersOf(current)), current.id, (stored) =>
      patchUser(stored, request.body, location(current.id)),
    );
    return sendScim(reply, 200, answer(change), receiptHeaders(change.revocationIds));
  });
  app.delete(`${path}/:id`, async (request, reply) => {
    const current = await directoryUser(ctx, idOf(request));
    const revocationId = await deleteDirectoryUser(callCtx(request, parametersOf(current)), current.id);
    return reply
      .code(204)
      .headers(receiptHeaders([revocationId]))
      .send();
  });
}

function parametersOf(user: { readonly id: string; readonly userName: string }): Record<string, string> {
  return { id: user.id, user_id: user.userName };
}
