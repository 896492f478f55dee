// POST /delete_user_authorizations (specification §4.11).
import type { FastifyRequest } from 'fastify';
import { deleteUserAuthorizations } from '../../../../core/users/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

/**
 * The reference reads `user_id` from the query string of this POST; we accept the form body too.
 * A body that sends it at all, as an array (`user_id[]=…`) too, is read: refused as on every
 * other POST, not passed over for the query string's user.
 */
function bodyOrQuery(request: FastifyRequest): unknown {
  const body = request.body as Record<string, unknown> | undefined;
  const sent =
    body !== undefined &&
    body !== null &&
    Object.keys(body).some((name) => name === 'user_id' || name.startsWith('user_id['));
  return sent ? body : request.query;
}

export const deleteUserAuthorizationsRoute = defineRoute({
  ...ADMIN_API_CALLS.deleteUserAuthorizations,
  summary:
    "Delete a user's OAuth authorizations (configurations stay, nobody is disconnected); user_id may also be given in the query string, as the reference reads it",
  since: '3.5.4',
  source: 'post',
  input: bodyOrQuery,
  answerDoc: 'Deleted',
  async handle(ctx, { user_id }) {
    await deleteUserAuthorizations(ctx, user_id);
    return { status: 204 };
  },
});
