// GET /connection_list (specification §4.2).
import { listConnections } from '../../../../core/listings/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';
import { profileListingResponse, STALE_NODES_DOC } from '../../stale-nodes.js';

export const connectionListRoute = defineRoute({
  ...ADMIN_API_CALLS.connectionList,
  summary: 'All connections, per profile',
  since: '3.5.3',
  source: 'query',
  answerDoc: `Connections per profile id. ${STALE_NODES_DOC}`,
  async handle(ctx, { show_all }) {
    return profileListingResponse('connection_list', await listConnections(ctx, show_all ?? false));
  },
});
