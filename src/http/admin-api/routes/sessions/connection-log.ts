// GET /connection_log (an extension of this portal): the connection history, with filters and
// cursor pagination; `ip` and `at` answer "who had this address then", the question an abuse report asks.
import { connectionHistoryPage } from '../../../../core/sessions/index.js';
import { ADMIN_API_CALLS, DEFAULT_PAGE_SIZE } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';
import { PortalError } from '../../../../core/errors.js';

export const connectionLogRoute = defineRoute({
  ...ADMIN_API_CALLS.connectionLog,
  summary: 'Connection history: who was connected when, from where, with how much traffic (newest first)',
  since: 'extension',
  source: 'query',
  answerDoc: 'One page of the history',
  // "Who had this address?" is a look-up of people: in the audit log, with its reason.
  lookupOfPeople: (parameters) => parameters['ip'] !== undefined,
  async handle(ctx, params) {
    // Left unread, a port would answer "nobody" for a NAT address an abuse report names.
    if (params.port !== undefined) throw portNotLookedUp();
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
      ...(params.reason === undefined ? {} : { reason: params.reason }),
      limit: params.limit ?? DEFAULT_PAGE_SIZE,
    });
    return { status: 200, json: { connection_log: page.entries, next_cursor: page.nextCursor } };
  },
});

function portNotLookedUp(): PortalError {
  return new PortalError(
    'invalid-parameter',
    'invalid value for "port": connection_log keeps no ports; GET /attribution traces a public address and port through the node\'s NAT to the session behind it',
  );
}
