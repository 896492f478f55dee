// GET /connection_list (specification §4.2).
import { z } from 'zod';
import { jsonObjectOfProfiles, listConnections } from '../../core/list-connections.js';
import { defineRoute } from '../admin-route.js';
import { optional, param } from '../params.js';

export const connectionInfoSchema = z.object({
  user_id: z.string(),
  connection_id: z.string(),
  display_name: z.string(),
  ip_list: z.array(z.string()),
  vpn_proto: z.enum(['wireguard', 'openvpn']),
  auth_key: z.string().nullable(),
});

export const connectionListRoute = defineRoute({
  method: 'GET',
  path: '/connection_list',
  summary: 'All connections, per profile',
  since: '3.5.3',
  source: 'query',
  params: { show_all: optional(param.onOff, '`on`: every active configuration; `off` (default): only handshakes in the last 3 minutes') },
  success: {
    status: 200,
    doc: { description: 'Connections per profile id', schema: z.object({ connection_list: z.record(z.string(), z.array(connectionInfoSchema)) }) },
  },
  async handle(ctx, { show_all }) {
    return { status: 200, jsonText: jsonObjectOfProfiles('connection_list', await listConnections(ctx, show_all ?? false)) };
  },
});
