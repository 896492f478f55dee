// GET /stats (an extension of this portal): the daily usage series per profile, as the
// reference's `aggregate_stats` (the day's highest number of connections, its unique users).
import { dailySeries } from '../../../../core/sessions/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const statsRoute = defineRoute({
  ...ADMIN_API_CALLS.stats,
  summary: 'Daily usage per profile: highest number of connections and unique users',
  since: 'extension',
  source: 'query',
  answerDoc: 'Per profile id, one entry per finished day, oldest first',
  async handle(ctx, params) {
    const stats = await dailySeries(ctx, {
      ...(params.profile_id === undefined ? {} : { profileId: params.profile_id }),
      ...(params.since === undefined ? {} : { since: params.since }),
      ...(params.until === undefined ? {} : { until: params.until }),
    });
    return { status: 200, json: { stats } };
  },
});
