// GET /disabled_users (specification §4.4); `prefix`, `limit` and `cursor` are an extension (issue 25).
import { listUsers, listUsersPage } from '../../core/listings/index.js';
import { ADMIN_API_CALLS, disabledUsersAnswer } from '../../protocol/admin-api.js';
import { defineRoute } from '../admin-route.js';
import { DEFAULT_USERS_PAGE, userListingParams } from '../params.js';

export const disabledUsersRoute = defineRoute({
  ...ADMIN_API_CALLS.disabledUsers,
  summary: 'All disabled users',
  since: '3.5.2',
  source: 'query',
  params: userListingParams,
  success: { status: 200, doc: { description: 'Disabled user ids, sorted', schema: disabledUsersAnswer } },
  async handle(ctx, { prefix, limit, cursor }) {
    // Without the extension's parameters, the specification's answer, byte for byte.
    if (prefix === undefined && limit === undefined && cursor === undefined) {
      return { status: 200, jsonParts: ['{"disabled_users":', ...(await listUsers(ctx, { onlyDisabled: true })), '}'] };
    }
    const page = await listUsersPage(ctx, {
      onlyDisabled: true,
      limit: limit ?? DEFAULT_USERS_PAGE,
      ...(prefix === undefined ? {} : { prefix }),
      ...(cursor === undefined ? {} : { cursor }),
    });
    return { status: 200, json: { disabled_users: page.users, next_cursor: page.next_cursor } };
  },
});
