// GET /disabled_users (specification §4.4); `prefix`, `limit` and `cursor` are an extension, so a
// long list is read a page at a time.
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';
import { usersAnswerFor } from './users.js';

export const disabledUsersRoute = defineRoute({
  ...ADMIN_API_CALLS.disabledUsers,
  summary: 'All disabled users',
  since: '3.5.2',
  source: 'query',
  answerDoc: 'Disabled user ids, sorted',
  handle: (ctx, params) =>
    usersAnswerFor(ctx, params, {
      field: 'disabled_users',
      page: (disabled_users, next_cursor, directory_inactive) => ({ disabled_users, next_cursor, directory_inactive }),
    }),
});
