// GET /attribution (an extension of this portal): an abuse report's public address, port and
// moment, read backwards through the node's deterministic NAT mapping of that moment, answer the
// session that held the client address then; a tunnel or client address is looked up as
// connection_log does. Every look-up, answered or not, is in the audit log with its reason.
import { attribute } from '../../../../core/attribution/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const attributionRoute = defineRoute({
  ...ADMIN_API_CALLS.attribution,
  summary:
    'Who held an address at a moment: through a node’s deterministic NAT (public address and port), or by tunnel or client address',
  since: 'extension',
  source: 'query',
  answerDoc: 'The session that held the address then, and how the NAT mapping led to it',
  lookupOfPeople: () => true,
  async handle(ctx, params) {
    const answer = await attribute(ctx, {
      ip: params.ip,
      at: params.at,
      ...(params.port === undefined ? {} : { port: params.port }),
      ...(params.reason === undefined ? {} : { reason: params.reason }),
    });
    return { status: 200, json: answer };
  },
});
