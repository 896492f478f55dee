// POST /enrollment_token (ours, not the specification's): a token a device redeems at
// `{base_url}enroll` with its own key (src/core/enrollment/tokens.ts). Scope write, as create:
// the token makes a configuration later.
import { createEnrollmentToken } from '../../core/enrollment/index.js';
import { ADMIN_API_CALLS, enrollmentTokenAnswer } from '../../protocol/admin-api.js';
import { defineRoute } from '../admin-route.js';
import { optional, param, required, SESSION_EXPIRY_ALLOWED } from '../params.js';
import { deviceParams, deviceRequest } from './devices.js';

/** How long a token can be redeemed when `valid_for` is not sent. */
const DEFAULT_VALID_FOR = 'PT1H';

export const enrollmentTokenRoute = defineRoute({
  ...ADMIN_API_CALLS.enrollmentToken,
  summary: 'Make a token a device redeems at {base_url}enroll with its own key, for a configuration of this user and profile',
  since: 'extension',
  source: 'post',
  params: {
    user_id: required(param.userId, 'the user the configuration will belong to (made when missing, as by create)'),
    profile_id: required(param.profileId, 'identifier of the VPN profile'),
    display_name: optional(param.displayName, 'label of the configuration, 1–64 characters; default `Enrollment`'),
    expires_in: optional(param.isoDuration, "the configuration's lifetime from its redemption, as create's `expires_in`", SESSION_EXPIRY_ALLOWED),
    uses: optional(param.tokenUses, 'how many configurations the token can make, 1–1000 (default 1)'),
    valid_for: optional(param.isoDuration, 'ISO 8601 duration the token can be redeemed for, at most P90D (default PT1H)'),
    ...deviceParams,
  },
  success: { status: 200, doc: { description: 'The token (shown once), its end and its uses', schema: enrollmentTokenAnswer } },
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
    return { status: 200, json: { enrollment_token: token, token_id: stored.tokenId, expires_at: stored.expiresAt, uses: stored.uses } };
  },
});
