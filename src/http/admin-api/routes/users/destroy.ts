// POST /destroy (specification §4.7).
import { destroyUser } from '../../../../core/users/index.js';
import { ADMIN_API_CALLS, REVOCATION_HEADER } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const destroyRoute = defineRoute({
  ...ADMIN_API_CALLS.destroy,
  summary: 'Delete a user with all its configurations and authorizations',
  since: '3.0.6',
  source: 'post',
  answerDoc: 'Deleted; the `VPN-Portal-Revocation` header names the receipt (GET /revocation)',
  async handle(ctx, { user_id }) {
    const revocationId = await destroyUser(ctx, user_id);
    return { status: 204, headers: { [REVOCATION_HEADER]: revocationId } };
  },
});
