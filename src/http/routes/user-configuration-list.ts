// GET /user_configuration_list (specification §4.5).
import { z } from 'zod';
import { userConfigurations } from '../../core/user-configurations.js';
import { defineRoute } from '../admin-route.js';
import { param, required } from '../params.js';

const userConfigurationSchema = z.object({
  connection_id: z.string(),
  profile_id: z.string(),
  display_name: z.string(),
  auth_key: z.string().nullable(),
  expires_at: z.string().describe('ISO 8601 with numeric UTC offset, e.g. 2027-02-20T10:11:12+00:00'),
  vpn_proto: z.enum(['wireguard', 'openvpn']),
});

export const userConfigurationListRoute = defineRoute({
  method: 'GET',
  path: '/user_configuration_list',
  summary: 'Configurations of one user',
  since: '3.5.4',
  source: 'query',
  params: { user_id: required(param.userId, 'the user whose configurations are listed') },
  success: {
    status: 200,
    doc: { description: 'The configurations, latest expiry first', schema: z.object({ user_configuration_list: z.array(userConfigurationSchema) }) },
  },
  async handle(ctx, { user_id }) {
    return { status: 200, json: { user_configuration_list: await userConfigurations(ctx, user_id) } };
  },
});
