// The SCIM `/Groups` endpoint: create, read, list (`filter=displayName eq "…"`, paged), replace,
// patch (members added, removed — also Entra ID's `members[value eq "…"]` — or replaced) and
// delete, on the directory feature; a change that took members out answers the receipts of
// the configurations they lost (`scim.groupProfiles`).
import type { FastifyInstance } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import {
  createDirectoryGroup,
  deleteDirectoryGroup,
  directoryGroup,
  directoryGroups,
  replaceDirectoryGroup,
} from '../../core/directory/index.js';
import { groupResource, listResponse, patchGroup, readGroup, readListQuery } from '../../protocol/scim.js';
import { idOf, receiptHeaders, scimCallContext } from './scim-call.js';
import type { ScimCallers } from './scim-guard.js';
import { sendScim } from './scim-reply.js';

export function groupRoutes(app: FastifyInstance, ctx: PortalContext, callers: ScimCallers, base: URL): void {
  const location = (id: string): string => `${base.href}Groups/${id}`;
  const callCtx = (request: Parameters<typeof idOf>[0], parameters: Record<string, string>) =>
    scimCallContext(ctx, callers.get(request), request, 'Groups', parameters);
  const path = `${base.pathname}Groups`;

  app.get(path, async (request, reply) => {
    const query = readListQuery(request.query, ['displayName']);
    const page = await directoryGroups(ctx, query.filter?.value ?? null, query.startIndex, query.count);
    const resources = page.groups.map((group) => groupResource(group, location(group.id)));
    return sendScim(reply, 200, listResponse(resources, page.total, query.startIndex));
  });
  app.post(path, async (request, reply) => {
    const input = readGroup(request.body);
    const group = await createDirectoryGroup(callCtx(request, { group: input.displayName }), input);
    return sendScim(reply, 201, groupResource(group, location(group.id)), { location: location(group.id) });
  });
  app.get(`${path}/:id`, async (request, reply) => {
    const group = await directoryGroup(ctx, idOf(request));
    return sendScim(reply, 200, groupResource(group, location(group.id)));
  });
  app.put(`${path}/:id`, async (request, reply) => {
    const current = await directoryGroup(ctx, idOf(request));
    const input = readGroup(request.body);
    const change = await replaceDirectoryGroup(callCtx(request, parametersOf(current)), current.id, input);
    return sendScim(
      reply,
      200,
      groupResource(change.group, location(current.id)),
      receiptHeaders(change.revocationIds),
    );
  });
  app.patch(`${path}/:id`, async (request, reply) => {
    const current = await directoryGroup(ctx, idOf(request));
    const input = await patchGroup(current, request.body, location(current.id));
    const change = await replaceDirectoryGroup(callCtx(request, parametersOf(current)), current.id, input);
    return sendScim(
      reply,
      200,
      groupResource(change.group, location(current.id)),
      receiptHeaders(change.revocationIds),
    );
  });
  app.delete(`${path}/:id`, async (request, reply) => {
    const current = await directoryGroup(ctx, idOf(request));
    const revocationIds = await deleteDirectoryGroup(callCtx(request, parametersOf(current)), current.id);
    return reply.code(204).headers(receiptHeaders(revocationIds)).send();
  });
}

function parametersOf(group: { readonly id: string; readonly displayName: string }): Record<string, string> {
  return { id: group.id, group: group.displayName };
}
