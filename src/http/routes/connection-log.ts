// GET /connection_log (an extension of this portal): the connection history, with filters and
// cursor pagination; `ip` and `at` answer "who had this address then" (issue 25).
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
    ip: optional(
      param.ipAddress,
      "only sessions with this address: the tunnel IPv4 or IPv6 address, or the client's originating address (exact; any IPv6 text form)",
    ),
    at: optional(
      param.timestamp,
      'only sessions open at this moment: started at or before it and not ended by it (ISO 8601); with `ip`: who had the address then',
    ),
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
      ...(params.ip === undefined ? {} : { ip: params.ip }),
      ...(params.at === undefined ? {} : { at: params.at }),
      ...(params.cursor === undefined ? {} : { cursor: params.cursor }),
      limit: params.limit ?? DEFAULT_LIMIT,
    });
    return { status: 200, json: { connection_log: page.entries, next_cursor: page.nextCursor } };
  },
});
