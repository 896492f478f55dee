// GET /users (specification §4.3); `prefix`, `limit` and `cursor` are an extension, so the console's
// user search reads a page at a time instead of every user.
import type { z } from 'zod';
import type { PortalContext } from '../../../core/context.js';
import { listUsers, listUsersPage } from '../../../core/listings/index.js';
import { ADMIN_API_CALLS, DEFAULT_PAGE_SIZE, usersAnswer } from '../../../protocol/admin-api.js';
import { defineRoute, type RouteResponse } from '../admin-route.js';

export const usersRoute = defineRoute({
  ...ADMIN_API_CALLS.users,
  summary: 'All users',
  since: '3.5.2',
  source: 'query',
  success: { status: 200, doc: { description: 'User ids, sorted', schema: usersAnswer } },
  handle: (ctx, params) => usersAnswerFor(ctx, params, 'users'),
});

/** The answer of `users` or `disabled_users` (the `field`): all of them, or a page with the extension's parameters. */
export async function usersAnswerFor(
  ctx: PortalContext,
  { prefix, limit, cursor }: z.output<typeof ADMIN_API_CALLS.users.params>,
  field: 'users' | 'disabled_users',
): Promise<RouteResponse> {
  const onlyDisabled = field === 'disabled_users';
  // Without the extension's parameters, the specification's answer, as before.
  if (prefix === undefined && limit === undefined && cursor === undefined) {
    return { status: 200, jsonParts: [`{"${field}":`, ...(await listUsers(ctx, { onlyDisabled })), '}'] };
  }
  const page = await listUsersPage(ctx, {
    onlyDisabled,
    limit: limit ?? DEFAULT_PAGE_SIZE,
    ...(prefix === undefined ? {} : { prefix }),
    ...(cursor === undefined ? {} : { cursor }),
  });
  return { status: 200, json: { [field]: page.users, next_cursor: page.next_cursor } };
}
