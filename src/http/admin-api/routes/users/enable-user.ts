// POST /enable_user (specification §4.9).
import { enableUser } from '../../../../core/users/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const enableUserRoute = defineRoute({
  ...ADMIN_API_CALLS.enableUser,
  summary: 'Enable a user; its unexpired configurations work again',
  since: '3.5.1',
  source: 'post',
  answerDoc: 'Enabled',
  async handle(ctx, { user_id }) {
    await enableUser(ctx, user_id);
    return { status: 204 };
  },
});
