// GET /connected_users (specification §4.1).
import { listConnectedUsers } from '../../../../core/listings/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';
import { profileListingResponse, STALE_NODES_DOC } from '../../stale-nodes.js';

export const connectedUsersRoute = defineRoute({
  ...ADMIN_API_CALLS.connectedUsers,
  summary: 'Users currently connected, per profile',
  since: '3.5.1',
  source: 'query',
  answerDoc: `User ids per profile id. ${STALE_NODES_DOC}`,
  async handle(ctx, { show_all }) {
    return profileListingResponse('connected_users', await listConnectedUsers(ctx, show_all ?? false));
  },
});
