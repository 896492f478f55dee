// The Administrator API's wire shapes (specification §2, §4), described once for the portal's
// routes, their OpenAPI document and the typed client (src/admin-client/): each call's method
// and path, the parameters it takes, and the JSON it answers.
import { z } from 'zod';

export const ADMIN_API_PREFIX = 'admin/api/v1';

/** The media types `create` can answer, by format (Accept negotiation picks one). */
export const CONFIGURATION_MEDIA_TYPES = {
  openvpn: 'application/x-openvpn-profile',
  wireguard: 'application/x-wireguard-profile',
  'wireguard+tcp': 'application/x-wireguard+tcp-profile',
  apple: 'application/x-apple-aspen-config',
} as const;
export type ConfigFormat = keyof typeof CONFIGURATION_MEDIA_TYPES;

/** A connection as `connection_list` lists it (§2.3). */
export const connectionInfoSchema = z.object({
  user_id: z.string(),
  connection_id: z.string(),
  display_name: z.string(),
  ip_list: z.array(z.string()),
  vpn_proto: z.enum(['wireguard', 'openvpn']),
  auth_key: z.string().nullable(),
});
export type ConnectionInfo = z.infer<typeof connectionInfoSchema>;

/** A configuration as `user_configuration_list` lists it (§2.4). */
export const userConfigurationSchema = z.object({
  connection_id: z.string(),
  profile_id: z.string(),
  display_name: z.string(),
  auth_key: z.string().nullable(),
  expires_at: z.string().describe('ISO 8601 with numeric UTC offset, e.g. 2027-02-20T10:11:12+00:00'),
  vpn_proto: z.enum(['wireguard', 'openvpn']),
});
export type UserConfiguration = z.infer<typeof userConfigurationSchema>;

export const connectedUsersAnswer = z.object({ connected_users: z.record(z.string(), z.array(z.string())) });
export const connectionListAnswer = z.object({ connection_list: z.record(z.string(), z.array(connectionInfoSchema)) });
export const usersAnswer = z.object({ users: z.array(z.string()) });
export const disabledUsersAnswer = z.object({ disabled_users: z.array(z.string()) });
export const userConfigurationListAnswer = z.object({ user_configuration_list: z.array(userConfigurationSchema) });
/** An entry of the connection history (extension): connection_log plus where and on which node. */
export const connectionLogEntrySchema = z.object({
  user_id: z.string(),
  profile_id: z.string(),
  vpn_proto: z.enum(['wireguard', 'openvpn']),
  connection_id: z.string(),
  node_number: z.number().int(),
  ip_four: z.string(),
  ip_six: z.string(),
  originating_ip: z.string().nullable().describe('the client address the node saw; for WireGuard over TCP the address the relay saw'),
  connected_at: z.string(),
  disconnected_at: z.string().nullable().describe('null while the session is open'),
  bytes_in: z.number().nullable(),
  bytes_out: z.number().nullable(),
});
export type ConnectionLogEntry = z.infer<typeof connectionLogEntrySchema>;
export const connectionLogAnswer = z.object({
  connection_log: z.array(connectionLogEntrySchema),
  /** Pass as `cursor` for the next page; null on the last one. */
  next_cursor: z.string().nullable(),
});

/** One day of one profile's usage (extension). */
export const dailyStatsSchema = z.object({ date: z.string(), max_connection_count: z.number().int(), unique_user_count: z.number().int() });
export const statsAnswer = z.object({ stats: z.record(z.string(), z.array(dailyStatsSchema)) });

/** Every error, whatever its status. */
export const errorAnswer = z.object({ error: z.string() });

/** Method and path (below `{base_url}/admin/api/v1`) of every call, in the specification's order. */
export const ADMIN_API_CALLS = {
  connectedUsers: { method: 'GET', path: '/connected_users' },
  connectionList: { method: 'GET', path: '/connection_list' },
  users: { method: 'GET', path: '/users' },
  disabledUsers: { method: 'GET', path: '/disabled_users' },
  userConfigurationList: { method: 'GET', path: '/user_configuration_list' },
  create: { method: 'POST', path: '/create' },
  destroy: { method: 'POST', path: '/destroy' },
  disableUser: { method: 'POST', path: '/disable_user' },
  enableUser: { method: 'POST', path: '/enable_user' },
  deleteConnection: { method: 'POST', path: '/delete_connection' },
  deleteUserAuthorizations: { method: 'POST', path: '/delete_user_authorizations' },
  // Extensions of this portal.
  connectionLog: { method: 'GET', path: '/connection_log' },
  stats: { method: 'GET', path: '/stats' },
} as const;

/** The parameters of `create` as sent (form fields). */
export interface CreateParams {
  readonly user_id: string;
  readonly profile_id: string;
  readonly display_name?: string;
  readonly prefer_tcp?: 'yes' | 'no';
  /** ISO 8601 duration. */
  readonly expires_in?: string;
}
