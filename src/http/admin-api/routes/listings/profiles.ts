// GET /profiles (an extension of this portal): the profiles the key may use, so a script or an
// administrator can find a profile_id without reading the portal's configuration.
import { listProfiles } from '../../../../core/listings/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const profilesRoute = defineRoute({
  ...ADMIN_API_CALLS.profiles,
  summary: 'The profiles the key may use: id, display name, protocols, client ranges',
  since: 'extension',
  source: 'query',
  answerDoc: "In the configuration's order; a key limited to some profiles sees only those",
  async handle(ctx) {
    return { status: 200, json: { profiles: listProfiles(ctx) } };
  },
});
