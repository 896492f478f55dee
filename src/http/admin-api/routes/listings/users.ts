// GET /users (specification §4.3); `prefix`, `limit` and `cursor` are an extension, so the console's
// user search reads a page at a time instead of every user.
import type { z } from 'zod';
import type { PortalContext } from '../../../../core/context.js';
import { listUsers, listUsersPage } from '../../../../core/listings/index.js';
import { ADMIN_API_CALLS, DEFAULT_PAGE_SIZE } from '../../../../protocol/admin-api.js';
import { defineRoute, type JsonAnswer } from '../../admin-route.js';

export const usersRoute = defineRoute({
  ...ADMIN_API_CALLS.users,
  summary: 'All users',
  since: '3.5.2',
  source: 'query',
  answerDoc: 'User ids, sorted',
  handle: (ctx, params) =>
    usersAnswerFor(ctx, params, {
      field: 'users',
      page: (users, next_cursor, directory_inactive) => ({ users, next_cursor, directory_inactive }),
    }),
});

/** Which of the two listings, and its page as the call answers it. */
export interface UsersListing<T> {
  readonly field: 'users' | 'disabled_users';
  page(users: string[], nextCursor: string | null, directoryInactive: string[]): T;
}

/** The answer of `users` or `disabled_users`: all of them, or a page with the extension's parameters. */
export async function usersAnswerFor<T>(
  ctx: PortalContext,
  { prefix, limit, cursor }: z.output<typeof ADMIN_API_CALLS.users.params>,
  listing: UsersListing<T>,
): Promise<JsonAnswer<T>> {
  const onlyDisabled = listing.field === 'disabled_users';
  // Without the extension's parameters, the specification's answer, as before.
  if (prefix === undefined && limit === undefined && cursor === undefined) {
    return { status: 200, jsonParts: [`{"${listing.field}":`, ...(await listUsers(ctx, { onlyDisabled })), '}'] };
  }
  const page = await listUsersPage(ctx, {
    onlyDisabled,
    limit: limit ?? DEFAULT_PAGE_SIZE,
    ...(prefix === undefined ? {} : { prefix }),
    ...(cursor === undefined ? {} : { cursor }),
  });
  return { status: 200, json: listing.page(page.users, page.next_cursor, [...page.directory_inactive]) };
}
