// GET /connection_log (an extension of this portal): the connection history, with filters and
// cursor pagination.
import { connectionHistoryPage } from '../../core/sessions/index.js';
import { ADMIN_API_CALLS, connectionLogAnswer } from '../../protocol/admin-api.js';
import { defineRoute } from '../admin-route.js';
import { optional, param } from '../params.js';

const DEFAULT_LIMIT = 100;

export const connectionLogRoute = defineRoute({
  ...ADMIN_API_CALLS.connectionLog,
  summary: 'Connection history: who was connected when, from where, with how much traffic (newest first)',
  since: 'extension',
  source: 'query',
  params: {
    user_id: optional(param.userId, 'only this user'),
    profile_id: optional(param.profileId, 'only this profile'),
    connection_id: optional(param.connectionId, 'only this configuration (WireGuard public key or OpenVPN Common Name)'),
    since: optional(param.timestamp, 'only sessions still open at or after this time (ISO 8601 with offset)'),
    until: optional(param.timestamp, 'only sessions that started before this time (ISO 8601 with offset)'),
    open: optional(param.yesNo, '`yes`: only open sessions; `no`: only closed ones'),
    limit: optional(param.pageSize, `entries per page, 1–1000 (default ${DEFAULT_LIMIT})`),
    cursor: optional(param.cursor, '`next_cursor` of the previous page'),
  },
  success: { status: 200, doc: { description: 'One page of the history', schema: connectionLogAnswer } },
  async handle(ctx, params) {
    const page = await connectionHistoryPage(ctx, {
      ...(params.user_id === undefined ? {} : { userId: params.user_id }),
      ...(params.profile_id === undefined ? {} : { profileId: params.profile_id }),
      ...(params.connection_id === undefined ? {} : { connectionId: params.connection_id }),
      ...(params.since === undefined ? {} : { since: params.since }),
      ...(params.until === undefined ? {} : { until: params.until }),
      ...(params.open === undefined ? {} : { open: params.open }),
      ...(params.cursor === undefined ? {} : { cursor: params.cursor }),
      limit: params.limit ?? DEFAULT_LIMIT,
    });
    return { status: 200, json: { connection_log: page.entries, next_cursor: page.nextCursor } };
  },
});
