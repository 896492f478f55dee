// The SCIM `/Groups` endpoint: create, read, list (`filter=displayName eq "…"`, the groups a user
// is in `members eq "…"`, or a directory's membership check `id eq "…" and members eq "…"`;
// paged), replace,
// patch (members added, removed — also by a filter, such as Entra ID's `members[value eq "…"]` —
// or replaced) and delete, on the directory feature; a change that took members out answers the
// receipts of the configurations they lost (`scim.groupProfiles`). Every answer takes `attributes`
// or `excludedAttributes` (`excludedAttributes=members` reads a group without its members); a
// list answer holds at most MAX_LISTED_MEMBERS members, and a large group is sent in pieces.
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import {
  createDirectoryGroup,
  deleteDirectoryGroup,
  directoryGroup,
  directoryGroups,
  patchDirectoryGroup,
  replaceDirectoryGroup,
} from '../../core/directory/index.js';
import {
  groupResource,
  groupResourceText,
  listResponse,
  patchGroup,
  readGroup,
  readGroupAttributes,
  readGroupListQuery,
  SCIM_CONTENT_TYPE,
  type GroupAttributeSelection,
  type ScimGroupView,
} from '../../protocol/scim.js';
import { idOf, receiptHeaders, scimCallContext, type ScimRequests } from './scim-call.js';
import { sendScim } from './scim-reply.js';

/** Members up to which a group's answer is sent as one piece of text. */
const MEMBERS_IN_ONE_PIECE = 1000;

export function groupRoutes(app: FastifyInstance, ctx: PortalContext, requests: ScimRequests, base: URL): void {
  const location = (id: string): string => `${base.href}Groups/${id}`;
  const callCtx = (request: Parameters<typeof idOf>[0], parameters: Record<string, string>) =>
    scimCallContext(ctx, requests, request, 'Groups', parameters);
  const path = `${base.pathname}Groups`;
  const send = (
    reply: FastifyReply,
    status: number,
    group: ScimGroupView,
    selection: GroupAttributeSelection,
    headers: Record<string, string> = {},
  ) => sendGroup(reply, status, group, location(group.id), selection, headers);

  app.get(path, async (request, reply) => {
    const query = readGroupListQuery(request.query);
    const selection = readGroupAttributes(request.query);
    const page = await directoryGroups(ctx, query.filter, query.startIndex, query.count, selection);
    const resources = page.groups.map((group) => groupResource(group, location(group.id), selection));
    return sendScim(reply, 200, listResponse(resources, page.total, query.startIndex));
  });
  app.post(path, async (request, reply) => {
    const selection = readGroupAttributes(request.query);
    const input = readGroup(request.body);
    const group = await createDirectoryGroup(callCtx(request, { group: input.displayName }), input);
    return send(reply, 201, group, selection, { location: location(group.id) });
  });
  app.get(`${path}/:id`, async (request, reply) => {
    const selection = readGroupAttributes(request.query);
    return send(reply, 200, await directoryGroup(ctx, idOf(request), selection), selection);
  });
  app.put(`${path}/:id`, async (request, reply) => {
    const selection = readGroupAttributes(request.query);
    const current = await directoryGroup(ctx, idOf(request), { members: false });
    const input = readGroup(request.body, current);
    const change = await replaceDirectoryGroup(callCtx(request, parametersOf(current)), current.id, input);
    return send(reply, 200, change.group, selection, receiptHeaders(change.revocationIds));
  });
  app.patch(`${path}/:id`, async (request, reply) => {
    const selection = readGroupAttributes(request.query);
    const current = await directoryGroup(ctx, idOf(request), { members: false });
    // Applied in the change's transaction to the group as stored then, not to `current`.
    const change = await patchDirectoryGroup(callCtx(request, parametersOf(current)), current.id, (stored) =>
      patchGroup(stored, request.body, location(current.id)),
    );
    return send(reply, 200, change.group, selection, receiptHeaders(change.revocationIds));
  });
  app.delete(`${path}/:id`, async (request, reply) => {
    const current = await directoryGroup(ctx, idOf(request), { members: false });
    const revocationIds = await deleteDirectoryGroup(callCtx(request, parametersOf(current)), current.id);
    return reply.code(204).headers(receiptHeaders(revocationIds)).send();
  });
}

/** One Group resource: as one text, or for a large group in pieces (groupResourceText). */
function sendGroup(
  reply: FastifyReply,
  status: number,
  group: ScimGroupView,
  location: string,
  selection: GroupAttributeSelection,
  headers: Record<string, string>,
): FastifyReply {
  const pieces = groupResourceText(group, location, selection);
  const large = selection.members && (group.members?.length ?? 0) > MEMBERS_IN_ONE_PIECE;
  return reply
    .code(status)
    .headers(headers)
    .type(large ? `${SCIM_CONTENT_TYPE}; charset=utf-8` : SCIM_CONTENT_TYPE)
    .send(large ? Readable.from(pieces) : [...pieces].join(''));
}

function parametersOf(group: { readonly id: string; readonly displayName: string }): Record<string, string> {
  return { id: group.id, group: group.displayName };
}
