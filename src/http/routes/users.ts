// GET /users (specification §4.3); `prefix`, `limit` and `cursor` are an extension (issue 25).
import { listUsers, listUsersPage } from '../../core/listings/index.js';
import { ADMIN_API_CALLS, usersAnswer } from '../../protocol/admin-api.js';
import { defineRoute } from '../admin-route.js';
import { DEFAULT_USERS_PAGE, userListingParams } from '../params.js';

export const usersRoute = defineRoute({
  ...ADMIN_API_CALLS.users,
  summary: 'All users',
  since: '3.5.2',
  source: 'query',
  params: userListingParams,
  success: { status: 200, doc: { description: 'User ids, sorted', schema: usersAnswer } },
  async handle(ctx, { prefix, limit, cursor }) {
    // Without the extension's parameters, the specification's answer, byte for byte.
    if (prefix === undefined && limit === undefined && cursor === undefined) {
      return { status: 200, jsonParts: ['{"users":', ...(await listUsers(ctx, { onlyDisabled: false })), '}'] };
    }
    const page = await listUsersPage(ctx, {
      onlyDisabled: false,
      limit: limit ?? DEFAULT_USERS_PAGE,
      ...(prefix === undefined ? {} : { prefix }),
      ...(cursor === undefined ? {} : { cursor }),
    });
    return { status: 200, json: { users: page.users, next_cursor: page.next_cursor } };
  },
});
