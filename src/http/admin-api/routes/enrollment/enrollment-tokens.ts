// GET /enrollment_tokens (ours): the enrollment tokens and where each stands (never the token
// itself, which the portal does not have), limited to the key's profiles.
import { enrollmentTokenInfo, listEnrollmentTokens } from '../../../../core/enrollment/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const enrollmentTokensRoute = defineRoute({
  ...ADMIN_API_CALLS.enrollmentTokens,
  summary: 'The enrollment tokens, newest first, with their state',
  since: 'extension',
  source: 'query',
  answerDoc: 'The tokens, newest first',
  async handle(ctx, { user_id }) {
    const now = ctx.clock.now();
    const tokens = await listEnrollmentTokens(ctx, user_id);
    return { status: 200, json: { enrollment_tokens: tokens.map((token) => enrollmentTokenInfo(ctx, token, now)) } };
  },
});
