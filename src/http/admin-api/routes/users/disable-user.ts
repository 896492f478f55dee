// POST /disable_user (specification §4.8).
import { disableUser } from '../../../../core/users/index.js';
import { ADMIN_API_CALLS, REVOCATION_HEADER } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const disableUserRoute = defineRoute({
  ...ADMIN_API_CALLS.disableUser,
  summary: 'Disable a user and disconnect all of its connections',
  since: '3.5.1',
  source: 'post',
  answerDoc: 'Disabled; the `VPN-Portal-Revocation` header names the receipt (GET /revocation)',
  async handle(ctx, { user_id }) {
    const revocationId = await disableUser(ctx, user_id);
    return { status: 204, headers: { [REVOCATION_HEADER]: revocationId } };
  },
});
