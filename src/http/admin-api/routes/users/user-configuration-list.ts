// GET /user_configuration_list (specification §4.5).
import { userConfigurations } from '../../../../core/users/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const userConfigurationListRoute = defineRoute({
  ...ADMIN_API_CALLS.userConfigurationList,
  summary: 'Configurations of one user',
  since: '3.5.4',
  source: 'query',
  answerDoc: 'The configurations, latest expiry first',
  async handle(ctx, { user_id }) {
    return { status: 200, json: { user_configuration_list: await userConfigurations(ctx, user_id) } };
  },
});
