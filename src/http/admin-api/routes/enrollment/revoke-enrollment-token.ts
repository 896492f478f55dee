// POST /revoke_enrollment_token (ours): the token is refused (410) from now on, by every
// portal instance. Configurations it made stay (delete_connection removes them).
import { revokeEnrollmentToken } from '../../../../core/enrollment/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const revokeEnrollmentTokenRoute = defineRoute({
  ...ADMIN_API_CALLS.revokeEnrollmentToken,
  summary: 'Revoke an enrollment token: redeeming it answers 410 from now on',
  since: 'extension',
  source: 'post',
  answerDoc: 'Revoked (also when it was revoked already)',
  async handle(ctx, { user_id, token_id }) {
    await revokeEnrollmentToken(ctx, user_id, token_id);
    return { status: 204 };
  },
});
