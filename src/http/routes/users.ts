// GET /users (specification §4.3).
import { z } from 'zod';
import { listUsers } from '../../core/list-users.js';
import { defineRoute } from '../admin-route.js';

export const usersRoute = defineRoute({
  method: 'GET',
  path: '/users',
  summary: 'All users',
  since: '3.5.2',
  source: 'query',
  params: {},
  success: { status: 200, doc: { description: 'User ids, sorted', schema: z.object({ users: z.array(z.string()) }) } },
  async handle(ctx) {
    return { status: 200, json: { users: await listUsers(ctx, { onlyDisabled: false }) } };
  },
});
