// POST /disable_user (specification §4.8).
import { disableUser } from '../../core/disable-user.js';
import { ADMIN_API_CALLS } from '../../protocol/admin-api.js';
import { defineRoute } from '../admin-route.js';
import { param, required } from '../params.js';

export const disableUserRoute = defineRoute({
  ...ADMIN_API_CALLS.disableUser,
  summary: 'Disable a user and disconnect all of its connections',
  since: '3.5.1',
  source: 'post',
  params: { user_id: required(param.userId, 'the user to disable') },
  success: { status: 204, doc: { description: 'Disabled' } },
  async handle(ctx, { user_id }) {
    await disableUser(ctx, user_id);
    return { status: 204 };
  },
});
