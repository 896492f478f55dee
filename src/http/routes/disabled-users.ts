// GET /disabled_users (specification §4.4).
import { listUsers } from '../../core/listings/index.js';
import { ADMIN_API_CALLS, disabledUsersAnswer } from '../../protocol/admin-api.js';
import { defineRoute } from '../admin-route.js';

export const disabledUsersRoute = defineRoute({
  ...ADMIN_API_CALLS.disabledUsers,
  summary: 'All disabled users',
  since: '3.5.2',
  source: 'query',
  success: { status: 200, doc: { description: 'Disabled user ids, sorted', schema: disabledUsersAnswer } },
  async handle(ctx) {
    return { status: 200, jsonParts: ['{"disabled_users":', ...(await listUsers(ctx, { onlyDisabled: true })), '}'] };
  },
});
