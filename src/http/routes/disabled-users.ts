// GET /disabled_users (specification §4.4).
import { z } from 'zod';
import { listUsers } from '../../core/list-users.js';
import { defineRoute } from '../admin-route.js';

export const disabledUsersRoute = defineRoute({
  method: 'GET',
  path: '/disabled_users',
  summary: 'All disabled users',
  since: '3.5.2',
  source: 'query',
  params: {},
  success: { status: 200, doc: { description: 'Disabled user ids, sorted', schema: z.object({ disabled_users: z.array(z.string()) }) } },
  async handle(ctx) {
    return { status: 200, json: { disabled_users: await listUsers(ctx, { onlyDisabled: true }) } };
  },
});
