// GET /audit_log (ours, not the specification's): who changed what through the Admin API, and
// which calls were refused, newest first, a page at a time. Needs scope admin and a key for
// every profile.
import { readAuditLog } from '../../../../core/access/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const auditLogRoute = defineRoute({
  ...ADMIN_API_CALLS.auditLog,
  summary: 'The audit log: every call that changed something, was refused or failed, newest first',
  since: 'extension',
  source: 'query',
  needsEveryProfile: true,
  answerDoc: 'One page of entries, newest first',
  async handle(ctx, { since, until, key, user_id, cursor, limit }) {
    const page = await readAuditLog(ctx, {
      ...(since === undefined ? {} : { since }),
      ...(until === undefined ? {} : { until }),
      ...(key === undefined ? {} : { keyName: key }),
      ...(user_id === undefined ? {} : { userId: user_id }),
      ...(cursor === undefined ? {} : { cursor }),
      ...(limit === undefined ? {} : { limit }),
    });
    return { status: 200, json: page };
  },
});
