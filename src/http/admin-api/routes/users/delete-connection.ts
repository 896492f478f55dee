// POST /delete_connection (specification §4.10).
import { deleteConnection } from '../../../../core/users/index.js';
import { ADMIN_API_CALLS, REVOCATION_HEADER } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const deleteConnectionRoute = defineRoute({
  ...ADMIN_API_CALLS.deleteConnection,
  summary: 'Delete one configuration of a user',
  since: '3.5.3',
  source: 'post',
  answerDoc:
    'Deleted (also when the user has no such configuration); when one was, the `VPN-Portal-Revocation` header names the receipt',
  async handle(ctx, { user_id, connection_id }) {
    const revocationId = await deleteConnection(ctx, user_id, connection_id);
    return revocationId === null ? { status: 204 } : { status: 204, headers: { [REVOCATION_HEADER]: revocationId } };
  },
});
