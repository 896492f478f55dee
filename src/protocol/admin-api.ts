// The Administrator API's wire shapes (specification §2, §4), described once for the portal's
// routes, their OpenAPI document and the typed client (src/admin-client/): each call's method
// and path, the parameters it takes, and the JSON it answers.
import { z } from 'zod';
import type { Platform } from '../shared/platforms.js';
import { platformSchema } from './platforms.js';

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
/** Sent with `prefix`, `limit` or `cursor` only (extension): without them the answer is the specification's. */
const nextUserCursor = z
  .string()
  .nullable()
  .optional()
  .describe('extension, only when `prefix`, `limit` or `cursor` was sent: pass as `cursor` for the next page; null on the last page');
export const usersAnswer = z.object({ users: z.array(z.string()), next_cursor: nextUserCursor });
export const disabledUsersAnswer = z.object({ disabled_users: z.array(z.string()), next_cursor: nextUserCursor });

/** The extension parameters of `users` and `disabled_users` (query parameters). */
export interface UsersQuery {
  /** Only user ids starting with this text (exact, case-sensitive). */
  readonly prefix?: string;
  /** 1–1000, default 100. */
  readonly limit?: number;
  readonly cursor?: string;
}
export interface UsersPage {
  readonly users: string[];
  readonly next_cursor: string | null;
}
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

/** A profile as `GET /profiles` (extension) shows it: what `create` needs to know before asking. */
export const profileSchema = z.object({
  profile_id: z.string(),
  display_name: z.string(),
  vpn_proto_list: z.array(z.enum(['wireguard', 'openvpn'])).describe('the protocols the profile offers, its preferred one first'),
  default_gateway: z.boolean().describe('true: all traffic goes through the tunnel; false: only its routes'),
  ranges: z
    .array(
      z.object({
        node_number: z.number().int(),
        vpn_proto: z.enum(['wireguard', 'openvpn']),
        range_four: z.string(),
        range_six: z.string(),
      }),
    )
    .describe('the client address ranges, per node and protocol'),
});
export type ProfileListing = z.infer<typeof profileSchema>;
export const profilesAnswer = z.object({ profiles: z.array(profileSchema) });

/** Every error, whatever its status. */
export const errorAnswer = z.object({ error: z.string() });

/**
 * What an admin key may do, each scope including the one before: `read` the five listings,
 * `write` also create, disable/enable and delete_connection, `admin` everything (destroy,
 * delete_user_authorizations, the audit log). The specification's secret has `admin`.
 */
export const ADMIN_SCOPES = ['read', 'write', 'admin'] as const;
export type AdminScope = (typeof ADMIN_SCOPES)[number];

/** True when a key of scope `held` may make a call that needs `needed`. */
export function scopeAllows(held: AdminScope, needed: AdminScope): boolean {
  return ADMIN_SCOPES.indexOf(held) >= ADMIN_SCOPES.indexOf(needed);
}

/**
 * The answer header of disable_user, destroy and delete_connection: the id of the revocation
 * receipt that says when each node took the configurations away (GET /revocation).
 */
export const REVOCATION_HEADER = 'VPN-Portal-Revocation';

/** The request header that makes a POST safe to retry (the first answer is given again for 24 h). */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/**
 * Sent with a listing that shows some nodes' connections as they last answered (the node
 * does not answer now): their numbers, comma-separated. Absent when every node answered.
 */
export const STALE_NODES_HEADER = 'VPN-Portal-Stale-Nodes';

/**
 * Method, path (below `{base_url}/admin/api/v1`) and needed scope of every call: the
 * specification's eleven in its order, then the portal's own (`connection_log`, `stats`, `audit_log`,
 * `extend`, the webhook calls, the enrollment tokens).
 */
export const ADMIN_API_CALLS = {
  connectedUsers: { method: 'GET', path: '/connected_users', scope: 'read' },
  connectionList: { method: 'GET', path: '/connection_list', scope: 'read' },
  users: { method: 'GET', path: '/users', scope: 'read' },
  disabledUsers: { method: 'GET', path: '/disabled_users', scope: 'read' },
  userConfigurationList: { method: 'GET', path: '/user_configuration_list', scope: 'read' },
  create: { method: 'POST', path: '/create', scope: 'write' },
  destroy: { method: 'POST', path: '/destroy', scope: 'admin' },
  disableUser: { method: 'POST', path: '/disable_user', scope: 'write' },
  enableUser: { method: 'POST', path: '/enable_user', scope: 'write' },
  deleteConnection: { method: 'POST', path: '/delete_connection', scope: 'write' },
  deleteUserAuthorizations: { method: 'POST', path: '/delete_user_authorizations', scope: 'admin' },
  // Extensions of this portal.
  connectionLog: { method: 'GET', path: '/connection_log', scope: 'read' },
  stats: { method: 'GET', path: '/stats', scope: 'read' },
  profiles: { method: 'GET', path: '/profiles', scope: 'read' },
  auditLog: { method: 'GET', path: '/audit_log', scope: 'admin' },
  extend: { method: 'POST', path: '/extend', scope: 'write' },
  webhooks: { method: 'GET', path: '/webhooks', scope: 'admin' },
  createWebhook: { method: 'POST', path: '/create_webhook', scope: 'admin' },
  deleteWebhook: { method: 'POST', path: '/delete_webhook', scope: 'admin' },
  rotateWebhookSecret: { method: 'POST', path: '/rotate_webhook_secret', scope: 'admin' },
  testWebhook: { method: 'POST', path: '/test_webhook', scope: 'admin' },
  webhookDeliveries: { method: 'GET', path: '/webhook_deliveries', scope: 'admin' },
  enrollmentToken: { method: 'POST', path: '/enrollment_token', scope: 'write' },
  enrollmentTokens: { method: 'GET', path: '/enrollment_tokens', scope: 'read' },
  revokeEnrollmentToken: { method: 'POST', path: '/revoke_enrollment_token', scope: 'write' },
  revocation: { method: 'GET', path: '/revocation', scope: 'read' },
  revocations: { method: 'GET', path: '/revocations', scope: 'read' },
  registerDevice: { method: 'POST', path: '/register_device', scope: 'write' },
  devices: { method: 'GET', path: '/devices', scope: 'read' },
  device: { method: 'GET', path: '/device', scope: 'read' },
  retireDevice: { method: 'POST', path: '/retire_device', scope: 'write' },
  adminKeys: { method: 'GET', path: '/admin_keys', scope: 'admin' },
  createAdminKey: { method: 'POST', path: '/create_admin_key', scope: 'admin' },
  revokeAdminKey: { method: 'POST', path: '/revoke_admin_key', scope: 'admin' },
} as const satisfies Record<string, { method: 'GET' | 'POST'; path: string; scope: AdminScope }>;

/** One entry of the audit log: an Admin API call that changed something, or was refused or failed. */
export const auditEntrySchema = z.object({
  id: z.string().describe('opaque, ordered by time; pass the last one seen as `cursor` for older entries'),
  at: z.string().describe('ISO 8601 with numeric UTC offset'),
  key_name: z.string().nullable().describe("the admin key's name, `secret` for the specification's secret, null when no valid key was presented"),
  source_address: z.string(),
  call: z.string().describe("the call's name (`create`), or the path asked for when it names no call"),
  parameters: z.record(z.string(), z.string()).describe("the call's parameters as sent; never a secret, never a file"),
  status: z.int().describe('the HTTP status of the answer'),
  user_id: z.string().nullable(),
  connection_ids: z.array(z.string()).describe('the configurations the call created or deleted'),
  detail: z.string().nullable().describe('why the call was refused or failed; null when it succeeded'),
  repeated: z
    .int()
    .describe(
      'refusals (401, 403) are coalesced: how many more refusals of the same source address (an IPv6 client by its /64) and reason came in the same minute after this one; 0 for every other entry',
    ),
});
export type AuditEntry = z.infer<typeof auditEntrySchema>;
export const auditLogAnswer = z.object({
  audit_log: z.array(auditEntrySchema).describe('newest first'),
  next_cursor: z.string().nullable().describe('pass as `cursor` for the next (older) page; null on the last page'),
});
export type AuditLogPage = z.infer<typeof auditLogAnswer>;

/** The filters of `audit_log` as sent (query parameters). */
export interface AuditLogQuery {
  /** ISO 8601 timestamp: entries at or after it. */
  readonly since?: string;
  /** ISO 8601 timestamp: entries before it. */
  readonly until?: string;
  /** An admin key's name (`secret` for the specification's secret). */
  readonly key?: string;
  readonly user_id?: string;
  readonly cursor?: string;
  /** 1–1000, default 100. */
  readonly limit?: number;
}

/** The parameters of `create` as sent (form fields). */
export interface CreateParams extends DeviceParams {
  readonly user_id: string;
  readonly profile_id: string;
  readonly display_name?: string;
  readonly prefer_tcp?: 'yes' | 'no';
  /** ISO 8601 duration. */
  readonly expires_in?: string;
  /** Extension: the device's own WireGuard public key (the file then leaves PrivateKey to the device). */
  readonly public_key?: string;
  /** Extension: the device's own OpenVPN key, a PEM PKCS#10 request (the file then has no key). */
  readonly csr?: string;
  /** Extension: the platform the configuration is for; only `ios` and `macos` take the Apple profile. */
  readonly platform?: Platform;
  /** Extension: whether the Apple profile connects on demand, overriding the profile's `appleOnDemand`. */
  readonly on_demand?: 'yes' | 'no';
}

/** What `extend` answers (extension): the configuration's new expiry, and for OpenVPN its new certificate. */
export const extendAnswer = z.object({
  connection_id: z.string(),
  vpn_proto: z.enum(['wireguard', 'openvpn']),
  expires_at: z.string().describe('the new expiry, ISO 8601 with numeric UTC offset'),
  certificate: z
    .string()
    .nullable()
    .describe("OpenVPN: the new client certificate (PEM) for the device's own key, to replace the file's `<cert>` block; WireGuard: null"),
});
export type ExtendAnswer = z.infer<typeof extendAnswer>;

/** The parameters of `extend` as sent (form fields). */
export interface ExtendParams {
  readonly user_id: string;
  readonly connection_id: string;
  /** ISO 8601 duration from now, by create's rules; default `sessionExpiry`. */
  readonly expires_in?: string;
}

/** A webhook subscription as listed (its secret is shown only when made or rotated). */
export const webhookInfoSchema = z.object({
  webhook_id: z.string(),
  url: z.string(),
  event_types: z.array(z.string()).describe('the event types sent to it; `["*"]`: every type'),
  description: z.string().nullable(),
  created_at: z.string(),
  previous_secret_until: z.string().nullable().describe('after a rotation: until when the previous secret signs too'),
});
export type WebhookInfo = z.infer<typeof webhookInfoSchema>;
export const webhooksAnswer = z.object({ webhooks: z.array(webhookInfoSchema) });
export const createWebhookAnswer = z.object({
  webhook: webhookInfoSchema,
  secret: z.string().describe('the signing secret: shown this once'),
});
export const rotateWebhookSecretAnswer = z.object({
  webhook_id: z.string(),
  secret: z.string().describe('the new signing secret: shown this once'),
  previous_secret_until: z.string().describe('until then every delivery carries a signature with the previous secret too'),
});
const attemptOutcome = z.enum(['sending', 'delivered', 'failed', 'refused', 'interrupted']);
export const testWebhookAnswer = z.object({
  delivery_id: z.string(),
  event_id: z.string(),
  outcome: attemptOutcome.exclude(['sending']),
  status: z.int().nullable().describe("the receiver's HTTP status; null when it did not answer"),
  duration_ms: z.int(),
  detail: z.string().nullable().describe('why it failed or was refused, or the start of the answer'),
});
export const webhookDeliverySchema = z.object({
  delivery_id: z.string().describe('opaque, ordered by time; the cursor of the log'),
  webhook_id: z.string(),
  event_id: z.string().describe("the body's `id`"),
  event_type: z.string(),
  created_at: z.string(),
  state: z.enum(['pending', 'delivered', 'failed', 'cancelled']),
  next_attempt_at: z.string().nullable().describe('while pending: when it is attempted next'),
  finished_at: z.string().nullable(),
  attempts: z.array(
    z.object({
      attempt: z.int(),
      started_at: z.string(),
      outcome: attemptOutcome,
      status: z.int().nullable(),
      duration_ms: z.int().nullable(),
      detail: z.string().nullable(),
    }),
  ),
});
export type WebhookDeliveryEntry = z.infer<typeof webhookDeliverySchema>;
export const webhookDeliveriesAnswer = z.object({
  webhook_deliveries: z.array(webhookDeliverySchema).describe('newest first'),
  next_cursor: z.string().nullable().describe('pass as `cursor` for the next (older) page; null on the last page'),
});
export type WebhookDeliveriesPage = z.infer<typeof webhookDeliveriesAnswer>;

/** The parameters of `create_webhook` as sent (form fields). */
export interface CreateWebhookParams {
  readonly url: string;
  /** Comma-separated event types, or `*`. */
  readonly event_types: string;
  readonly description?: string;
}

/** The filters of `webhook_deliveries` as sent (query parameters). */
export interface WebhookDeliveriesQuery {
  readonly webhook_id?: string;
  readonly event_type?: string;
  readonly event_id?: string;
  readonly state?: 'pending' | 'delivered' | 'failed' | 'cancelled';
  readonly since?: string;
  readonly until?: string;
  readonly cursor?: string;
  readonly limit?: number;
}

/** What `enrollment_token` answers (extension): the token, shown once, and how long and how often it can be redeemed. */
export const enrollmentTokenAnswer = z.object({
  enrollment_token: z.string().describe('the token (`vpe_…`); shown once, the portal keeps only a keyed hash'),
  token_id: z.string().describe("the token's id (its characters 5–16), for `enrollment_tokens` and `revoke_enrollment_token`"),
  expires_at: z.string().describe('until when it can be redeemed, ISO 8601 with numeric UTC offset'),
  uses: z.int().describe('how many configurations it can make'),
});
export type EnrollmentTokenAnswer = z.infer<typeof enrollmentTokenAnswer>;

/** The parameters of `enrollment_token` as sent (form fields). */
export interface EnrollmentTokenParams extends DeviceParams {
  readonly user_id: string;
  readonly profile_id: string;
  readonly display_name?: string;
  /** The configuration's lifetime (ISO 8601), by create's rules. */
  readonly expires_in?: string;
  /** 1–1000, default 1. */
  readonly uses?: number;
  /** How long the token can be redeemed (ISO 8601, at most P90D), default PT1H. */
  readonly valid_for?: string;
}

/** An enrollment token as `enrollment_tokens` lists it (never the token itself). */
export const enrollmentTokenInfoSchema = z.object({
  token_id: z.string(),
  user_id: z.string(),
  profile_id: z.string(),
  display_name: z.string().nullable(),
  expires_in: z.string().nullable().describe("the configuration's lifetime; null: sessionExpiry"),
  uses: z.int(),
  uses_left: z.int(),
  state: z.enum(['usable', 'used-up', 'expired', 'revoked']),
  created_at: z.string(),
  created_by: z.string().nullable().describe("the admin key that made it (`secret` for the specification's secret)"),
  expires_at: z.string(),
  revoked_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
});
export type EnrollmentTokenInfo = z.infer<typeof enrollmentTokenInfoSchema>;
export const enrollmentTokensAnswer = z.object({ enrollment_tokens: z.array(enrollmentTokenInfoSchema).describe('newest first') });

/** A revocation receipt (extension): which configurations left which nodes, and when each node confirmed it. */
export const revocationSchema = z.object({
  revocation_id: z.string(),
  user_id: z.string(),
  reason: z.enum(['disable_user', 'destroy', 'delete_connection', 'expiry']).describe('what revoked the configurations'),
  state: z
    .enum(['pending', 'overdue', 'applied', 'superseded'])
    .describe('applied: every node confirmed; overdue: a node is pending past revocationDeadline; superseded: enable_user came first'),
  requested_at: z.string(),
  overdue_at: z.string().nullable(),
  applied_at: z.string().nullable(),
  superseded_at: z.string().nullable(),
  connection_ids: z.array(z.string()),
  nodes: z.array(
    z.object({
      node_number: z.int(),
      state: z.enum(['pending', 'applied']),
      applied_at: z.string().nullable().describe('when the node confirmed its last configuration gone; null while pending'),
      connection_ids: z.array(z.string()),
    }),
  ),
});
export type RevocationInfo = z.infer<typeof revocationSchema>;
export const revocationsAnswer = z.object({ revocations: z.array(revocationSchema).describe('newest first') });

/** The filters of `revocations` as sent (query parameters). */
export interface RevocationsQuery {
  /** `pending` lists pending and overdue receipts. */
  readonly state?: 'pending' | 'overdue' | 'applied' | 'superseded';
  readonly user_id?: string;
  /** 1–1000, default 100. */
  readonly limit?: number;
}

/** The public endpoint, below `{base_url}`, where a device redeems an enrollment token (no admin key). */
export const ENROLL_PATH = 'enroll';

/** A registered device (extension, issue 23) with its configurations. */
export const deviceSchema = z.object({
  device_id: z.string().describe("the portal's own id (`dev_…`), stable for the device's life"),
  user_id: z.string(),
  profile_id: z.string().describe('the profile its enrollment uses unless a call names another'),
  platform: platformSchema,
  serial: z.string().nullable().describe('the serial number its MDM knows it by'),
  mdm_id: z.string().nullable().describe("the MDM's own id of the device (e.g. Intune's managed device id)"),
  identity: z.enum(['token', 'certificate']).describe('how it proves itself when it enrolls: a token, or its MDM certificate'),
  certificate: z
    .object({ subject: z.string(), issuer: z.string(), serial_number: z.string(), not_after: z.string() })
    .nullable()
    .describe('with identity `certificate`: the certificate it is bound to'),
  state: z.enum(['registered', 'active', 'retired']).describe('`registered` until its first configuration, then `active`; `retired` for good'),
  created_at: z.string(),
  retired_at: z.string().nullable(),
  last_seen_at: z.string().nullable().describe('when a session of one of its configurations last started'),
  configurations: z
    .array(z.object({ connection_id: z.string(), profile_id: z.string(), vpn_proto: z.enum(['wireguard', 'openvpn']), expires_at: z.string() }))
    .describe('its live configurations, at most one per profile'),
});
export type DeviceInfo = z.infer<typeof deviceSchema>;
export const deviceAnswer = z.object({ device: deviceSchema });
export const devicesAnswer = z.object({
  devices: z.array(deviceSchema).describe('newest first'),
  next_cursor: z.string().nullable().describe('pass as `cursor` for the next (older) page; null on the last page'),
});
export type DevicesPage = z.infer<typeof devicesAnswer>;

/** The parameters of `register_device` as sent (form fields); `serial` or `mdm_id` (or both). */
export interface RegisterDeviceParams {
  readonly user_id: string;
  readonly profile_id: string;
  readonly platform: Platform;
  readonly serial?: string;
  readonly mdm_id?: string;
}

/** The filters of `devices` as sent (query parameters). */
export interface DevicesQuery {
  readonly user_id?: string;
  readonly profile_id?: string;
  readonly platform?: Platform;
  readonly state?: 'registered' | 'active' | 'retired';
  readonly identity?: 'token' | 'certificate';
  readonly serial?: string;
  readonly mdm_id?: string;
  /** ISO 8601: devices last seen before it (or never seen and registered before it). */
  readonly last_seen_before?: string;
  readonly cursor?: string;
  /** 1–1000, default 100. */
  readonly limit?: number;
}

/** An admin key as `admin_keys` lists it (extension, issue 25): its rights and use, never its secret. */
export const adminKeyInfoSchema = z.object({
  key_id: z.string().describe("the key's id (the characters after `vpa_` that name its row); not a secret"),
  name: z.string(),
  scope: z.enum(ADMIN_SCOPES),
  profiles: z.array(z.string()).nullable().describe('the profiles it is limited to; null: every profile'),
  allow_list: z.array(z.string()).nullable().describe('the address prefixes it may be used from, on top of adminApi.allowList; null: no own limit'),
  created_at: z.string(),
  expires_at: z.string().nullable().describe('null: never expires'),
  last_used_at: z.string().nullable(),
  last_used_address: z.string().nullable(),
  revoked_at: z.string().nullable(),
  state: z
    .enum(['active', 'rotated', 'rotated-out', 'expired', 'revoked'])
    .describe('rotated: replaced, valid until its grace period ends (`expires_at`); rotated-out: that period ended'),
});
export type AdminKeyInfo = z.infer<typeof adminKeyInfoSchema>;
export const adminKeysAnswer = z.object({ admin_keys: z.array(adminKeyInfoSchema).describe('by name, newest first within a name') });
export const createAdminKeyAnswer = z.object({
  admin_key: adminKeyInfoSchema,
  secret: z.string().describe('the key itself (`vpa_…`): shown this once, the portal keeps only a keyed hash'),
});
export const revokeAdminKeyAnswer = z.object({
  name: z.string(),
  revoked: z.int().describe("how many keys of the name were revoked: the current one and any in a rotation's grace period"),
});

/** The parameters of `create_admin_key` as sent (form fields). */
export interface CreateAdminKeyParams {
  readonly name: string;
  /** Default `read`. */
  readonly scope?: AdminScope;
  /** Comma-separated profile ids; absent: every profile. */
  readonly profiles?: string;
  /** ISO 8601 duration; absent: never expires. */
  readonly expires_in?: string;
  /** Comma-separated CIDR prefixes; absent: only adminApi.allowList. */
  readonly allow_list?: string;
}

/** How `create` and `enrollment_token` name the device a configuration is for (extension): one of these. */
export interface DeviceParams {
  readonly device_id?: string;
  readonly serial?: string;
  readonly mdm_id?: string;
  /** The device's platform; default the registered device's, another answers 409. */
  readonly platform?: Platform;
}
