// POST /enrollment_token (ours, not the specification's): a token a device redeems at
// `{base_url}enroll` with its own key (src/core/enrollment/tokens.ts). Scope write, as create:
// the token makes a configuration later.
import { createEnrollmentToken } from '../../../../core/enrollment/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';
import { deviceRequest } from '../devices/devices.js';

/** How long a token can be redeemed when `valid_for` is not sent. */
const DEFAULT_VALID_FOR = 'PT1H';

export const enrollmentTokenRoute = defineRoute({
  ...ADMIN_API_CALLS.enrollmentToken,
  summary:
    'Make a token a device redeems at {base_url}enroll with its own key, for a configuration of this user and profile',
  since: 'extension',
  source: 'post',
  answerDoc: 'The token (shown once), its end and its uses',
  // A retry gets the token again only while it can be redeemed.
  handsOut: { kind: 'enrollment-token', idIn: (answer) => answer.token_id },
  async handle(ctx, params) {
    const { stored, token } = await createEnrollmentToken(ctx, {
      userId: params.user_id,
      profileId: params.profile_id,
      displayName: params.display_name,
      expiresIn: params.expires_in,
      uses: params.uses ?? 1,
      validFor: params.valid_for ?? DEFAULT_VALID_FOR,
      ...deviceRequest(params),
    });
    return {
      status: 200,
      json: { enrollment_token: token, token_id: stored.tokenId, expires_at: stored.expiresAt, uses: stored.uses },
    };
  },
});
