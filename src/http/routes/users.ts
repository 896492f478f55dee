// GET /users (specification §4.3).
import { listUsers } from '../../core/listings/index.js';
import { ADMIN_API_CALLS, usersAnswer } from '../../protocol/admin-api.js';
import { defineRoute } from '../admin-route.js';

export const usersRoute = defineRoute({
  ...ADMIN_API_CALLS.users,
  summary: 'All users',
  since: '3.5.2',
  source: 'query',
  success: { status: 200, doc: { description: 'User ids, sorted', schema: usersAnswer } },
  async handle(ctx) {
    return { status: 200, jsonParts: ['{"users":', ...(await listUsers(ctx, { onlyDisabled: false })), '}'] };
  },
});
