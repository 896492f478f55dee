// GET /revocation and GET /revocations (ours): the receipts of disable_user, destroy,
// delete_connection and expiry, saying when each node confirmed the configurations gone
// (src/core/revocations/receipts.ts). Scope read; a key limited to some profiles sees only receipts of
// its profiles.
import { listReceipts, readReceipt, type RevocationReceipt } from '../../../../core/revocations/index.js';
import { ADMIN_API_CALLS, type RevocationInfo } from '../../../../protocol/admin-api.js';
import { OPEN_REVOCATION_STATES } from '../../../../storage/revocations.js';
import { defineRoute } from '../../admin-route.js';

export const revocationRoute = defineRoute({
  ...ADMIN_API_CALLS.revocation,
  summary: 'A revocation receipt: which configurations left which nodes, and when each node confirmed it',
  since: 'extension',
  source: 'query',
  answerDoc: 'The receipt',
  async handle(ctx, { revocation_id }) {
    return { status: 200, json: revocationInfo(await readReceipt(ctx, revocation_id)) };
  },
});

export const revocationsRoute = defineRoute({
  ...ADMIN_API_CALLS.revocations,
  summary: 'Revocation receipts, newest first',
  since: 'extension',
  source: 'query',
  answerDoc: 'The receipts, newest first',
  async handle(ctx, { state, user_id, limit }) {
    const receipts = await listReceipts(ctx, {
      ...(state === undefined ? {} : { states: state === 'pending' ? OPEN_REVOCATION_STATES : [state] }),
      ...(user_id === undefined ? {} : { userId: user_id }),
      limit: limit ?? 100,
    });
    return { status: 200, json: { revocations: receipts.map(revocationInfo) } };
  },
});

function revocationInfo(receipt: RevocationReceipt): RevocationInfo {
  return {
    revocation_id: receipt.revocationId,
    user_id: receipt.userId,
    reason: receipt.reason,
    state: receipt.state,
    requested_at: receipt.requestedAt,
    overdue_at: receipt.overdueAt,
    applied_at: receipt.appliedAt,
    superseded_at: receipt.supersededAt,
    connection_ids: [...receipt.connectionIds],
    nodes: receipt.nodes.map((node) => ({
      node_number: node.nodeNumber,
      state: node.state,
      applied_at: node.appliedAt,
      connection_ids: [...node.connectionIds],
    })),
  };
}
