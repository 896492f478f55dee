// GET /enrollment_tokens (ours): the enrollment tokens and where each stands (never the token
// itself, which the portal does not have), limited to the key's profiles.
import { listEnrollmentTokens, tokenState } from '../../core/enrollment-tokens.js';
import { ADMIN_API_CALLS, enrollmentTokensAnswer } from '../../protocol/admin-api.js';
import { defineRoute } from '../admin-route.js';
import { optional, param } from '../params.js';

export const enrollmentTokensRoute = defineRoute({
  ...ADMIN_API_CALLS.enrollmentTokens,
  summary: 'The enrollment tokens, newest first, with their state',
  since: 'extension',
  source: 'query',
  params: { user_id: optional(param.userId, "only this user's tokens") },
  success: { status: 200, doc: { description: 'The tokens, newest first', schema: enrollmentTokensAnswer } },
  async handle(ctx, { user_id }) {
    const now = ctx.clock.now();
    const tokens = await listEnrollmentTokens(ctx, user_id);
    return {
      status: 200,
      json: {
        enrollment_tokens: tokens.map((token) => ({
          token_id: token.tokenId,
          user_id: token.userId,
          profile_id: token.profileId,
          display_name: token.displayName,
          expires_in: token.expiresIn,
          uses: token.uses,
          uses_left: token.usesLeft,
          state: tokenState(token, now),
          created_at: token.createdAt,
          created_by: token.createdBy,
          expires_at: token.expiresAt,
          revoked_at: token.revokedAt,
          last_used_at: token.lastUsedAt,
        })),
      },
    };
  },
});
