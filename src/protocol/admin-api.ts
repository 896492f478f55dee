// The Administrator API's wire shapes (specification §2, §4), described once for the portal's
// routes, their OpenAPI document, the typed client (src/admin-client/) and the CLI: each call's
// method and path, the parameters it takes (one zod schema per call), and the JSON it answers.
import { z } from 'zod';
import { DEVICE_STATES } from '../shared/device-states.js';
import { describePlatforms, PLATFORMS } from '../shared/platforms.js';
import { optional, param, required, type ParamsSchema, type SentParams } from './admin-api-params.js';
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
  .describe(
    'extension, only when `prefix`, `limit` or `cursor` was sent: pass as `cursor` for the next page; null on the last page',
  );
/** Sent with `prefix`, `limit` or `cursor` only (extension), beside the page's ids. */
const directoryInactive = z
  .array(z.string())
  .optional()
  .describe(
    'extension, only when `prefix`, `limit` or `cursor` was sent: the ids of this page that the directory (SCIM) last called inactive, sorted; `enable_user` answers 409 for them until it calls them active',
  );
export const usersAnswer = z.object({
  users: z.array(z.string()),
  next_cursor: nextUserCursor,
  directory_inactive: directoryInactive,
});
export const disabledUsersAnswer = z.object({
  disabled_users: z.array(z.string()),
  next_cursor: nextUserCursor,
  directory_inactive: directoryInactive,
});

/**
 * A page of `users` (or `disabled_users`) as the client gives it: the ids, the cursor (null on
 * the last page), and which of the ids the directory calls inactive.
 */
export type UsersPage = Readonly<Pick<z.infer<typeof usersAnswer>, 'users'>> & {
  readonly next_cursor: Exclude<z.infer<typeof usersAnswer>['next_cursor'], undefined>;
  readonly directory_inactive: readonly string[];
};
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
  originating_ip: z
    .string()
    .nullable()
    .describe('the client address the node saw; for WireGuard over TCP the address the relay saw'),
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

/** The session `attribution` names (extension): a connection_log entry, with the configuration's device. */
export const attributedSessionSchema = connectionLogEntrySchema.omit({ bytes_in: true, bytes_out: true }).extend({
  device_id: z
    .string()
    .nullable()
    .describe("the configuration's device; null for a configuration of no device, or one deleted since"),
});
export const attributionAnswer = z.object({
  at: z.string().describe('the moment asked about (ATOM, UTC)'),
  translation: z
    .object({
      node_number: z.number().int(),
      public_address: z.string(),
      port: z.number().int(),
      first_port: z.number().int(),
      last_port: z.number().int(),
      client_ip: z.string().describe("the client's tunnel IPv4 address whose block holds the port"),
      mapping_applied_at: z.string().describe('since when the node applied the mapping that was in force then'),
    })
    .nullable()
    .describe(
      "how the node's deterministic NAT maps the public address and port back; null when asked by a tunnel or client address",
    ),
  sessions: z
    .array(attributedSessionSchema)
    .describe(
      'the sessions that held the address then, newest first: through NAT, one (two when one user reconnected within the second asked about: the session begun in it and the one ended in it; another user within that second answers 409); by a tunnel address, every session that held it in that second; by a client address, one per session behind it',
    ),
});
export type AttributionAnswer = z.infer<typeof attributionAnswer>;

/** One day of one profile's usage (extension). */
export const dailyStatsSchema = z.object({
  date: z.string(),
  max_connection_count: z.number().int(),
  unique_user_count: z.number().int(),
});
export const statsAnswer = z.object({ stats: z.record(z.string(), z.array(dailyStatsSchema)) });

/** A profile as `GET /profiles` (extension) shows it: what `create` needs to know before asking. */
export const profileSchema = z.object({
  profile_id: z.string(),
  display_name: z.string(),
  vpn_proto_list: z
    .array(z.enum(['wireguard', 'openvpn']))
    .describe('the protocols the profile offers, its preferred one first'),
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
 * What an admin key may do on the Admin API, each scope including the one before: `read` the
 * five listings, `write` also create, disable/enable and delete_connection, `admin` everything
 * (destroy, delete_user_authorizations, the audit log). The specification's secret has `admin`.
 */
export const ADMIN_SCOPES = ['read', 'write', 'admin'] as const;
export type AdminScope = (typeof ADMIN_SCOPES)[number];

/**
 * Every scope a key can have: the Admin API's ladder, and `scim`, apart from it: a key for a
 * directory's provisioning client ({baseUrl}scim/v2/), which may call SCIM and nothing else.
 */
export const KEY_SCOPES = [...ADMIN_SCOPES, 'scim'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/**
 * True when a key of scope `held` may make a call that needs `needed`, or hold no less than a
 * key of scope `needed` (who may make or revoke which key). `scim` allows only itself; `admin`,
 * which may disable, enable and destroy users through the Admin API, holds no less than `scim`.
 */
export function scopeAllows(held: KeyScope, needed: KeyScope): boolean {
  if (held === 'scim') return needed === 'scim';
  if (needed === 'scim') return held === 'admin';
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

/** The default and the usual page size of the listings that take `limit`. */
export const DEFAULT_PAGE_SIZE = 100;

const PLATFORM_LIST = PLATFORMS.join(', ');

/** How `create` and `enrollment_token` name the device a configuration is for (extension): one of the three, and its platform. */
const deviceParamShape = {
  device_id: optional(
    param.deviceId,
    "extension: the registered device the configuration is for; it replaces the device's configuration in this profile",
  ),
  serial: optional(param.deviceIdentifier, 'extension: the device by its serial number (instead of `device_id`)'),
  mdm_id: optional(param.deviceIdentifier, "extension: the device by its MDM's id (instead of `device_id`)"),
  platform: optional(
    param.platform,
    `extension: ${PLATFORM_LIST}; default the registered device's platform, another answers 409`,
  ),
};

// The request parameters of each call (query string of a GET, form body of a POST), in the
// order they are checked: the route reads them, the OpenAPI document shows them, the typed
// client and the CLI send them (as SentParams).
const connectedUsersParams = z.object({
  show_all: optional(
    param.onOff,
    '`on`: every active configuration; `off` (default): only handshakes in the last 3 minutes',
  ),
});
const connectionListParams = z.object({
  show_all: optional(
    param.onOff,
    '`on`: every active configuration; `off` (default): only handshakes in the last 3 minutes',
  ),
});
/** `users` and `disabled_users` take the same extension parameters; without any of them, the specification's answer. */
const usersParams = z.object({
  prefix: optional(
    param.userId,
    'extension: only user ids starting with this text (case-sensitive); the answer then has `next_cursor`',
  ),
  limit: optional(
    param.pageSize,
    `extension: user ids per page, 1–1000 (default ${DEFAULT_PAGE_SIZE}); the answer then has \`next_cursor\``,
  ),
  cursor: optional(param.userCursor, 'extension: `next_cursor` of the previous page'),
});
const disabledUsersParams = usersParams;
const userConfigurationListParams = z.object({
  user_id: required(param.userId, 'the user whose configurations are listed'),
});
const createParams = z.object({
  user_id: required(param.userId, 'user identifier, 1–255 characters'),
  profile_id: required(param.profileId, 'identifier of the VPN profile'),
  display_name: optional(param.displayName, 'label of the configuration, 1–64 characters; default `Admin API`'),
  prefer_tcp: optional(param.yesNo, '`yes` or `no` (default): prefer connecting over TCP'),
  expires_in: optional(
    param.sessionExpiry,
    'ISO 8601 duration; must be `sessionExpiry` or an entry of `supportedSessionExpiry`',
  ),
  public_key: optional(
    param.devicePublicKey,
    "extension: the device's own WireGuard public key (Base64 of 32 bytes, as `wg pubkey` prints it); the file's PrivateKey is then `@DEVICE_PRIVATE_KEY@` for the device to replace; 409 when the key is in use",
  ),
  csr: optional(
    param.certificateRequest,
    "extension: the device's own OpenVPN key as a PEM PKCS#10 certificate request (Ed25519 or P-256); the portal certifies its key and the file has no `<key>` block",
  ),
  ...deviceParamShape,
  platform: optional(
    param.platform,
    `extension: the platform the configuration is for, ${describePlatforms()}; for a registered device its platform is the default and another answers 409; only \`ios\` (the default) and \`macos\` take the Apple profile, whose VPNSubType names the WireGuard app of that platform`,
  ),
  on_demand: optional(
    param.yesNo,
    "extension: `yes` or `no`: whether the Apple profile connects on demand (always on), overriding the profile's `appleOnDemand`; other formats ignore it",
  ),
});
const destroyParams = z.object({ user_id: required(param.userId, 'the user to delete') });
const disableUserParams = z.object({ user_id: required(param.userId, 'the user to disable') });
const enableUserParams = z.object({ user_id: required(param.userId, 'the user to enable') });
const deleteConnectionParams = z.object({
  user_id: required(param.userId, 'the user owning the configuration'),
  connection_id: required(param.connectionId, 'WireGuard public key or OpenVPN certificate Common Name'),
});
const deleteUserAuthorizationsParams = z.object({
  user_id: required(param.userId, 'the user whose authorizations are deleted (form body or query string)'),
});
const connectionLogParams = z.object({
  user_id: optional(param.userId, 'only this user'),
  profile_id: optional(param.profileId, 'only this profile'),
  connection_id: optional(param.connectionId, 'only this configuration (WireGuard public key or OpenVPN Common Name)'),
  since: optional(param.timestamp, 'only sessions still open at or after this time (ISO 8601 with offset)'),
  until: optional(param.timestamp, 'only sessions that started before this time (ISO 8601 with offset)'),
  open: optional(param.yesNo, '`yes`: only open sessions; `no`: only closed ones'),
  ip: optional(
    param.ipAddress,
    "only sessions with this address: the tunnel IPv4 or IPv6 address, or the client's originating address (exact; any IPv6 text form)",
  ),
  at: optional(
    param.timestamp,
    "only sessions open at this moment: started at or before it and not ended before it (ISO 8601; times are kept to the second, so the second a session ended in counts); with `ip`: who had the address then. A moment more than a minute ahead of the portal's clock is refused (400)",
  ),
  port: optional(
    param.port,
    "refused (400): the history keeps no ports; an abuse report's public address and port are traced through the node's NAT by `attribution`",
  ),
  limit: optional(param.pageSize, `entries per page, 1–1000 (default ${DEFAULT_PAGE_SIZE})`),
  cursor: optional(param.cursor, '`next_cursor` of the previous page'),
  reason: optional(
    param.lookupReason,
    'with `ip`: why you look this up (1–200 characters, kept in the audit log); required when `lookups.requireReason.connectionLog` is true',
  ),
});
const attributionParams = z.object({
  ip: required(
    param.ipAddress,
    "with `port`: the node's public IPv4 address an abuse report names; without: a tunnel IPv4 or IPv6 address or the client's own address",
  ),
  port: optional(param.port, 'the source port the report names (with a public address)'),
  at: required(
    param.timestamp,
    "the moment the report names (ISO 8601 with offset; seconds count); one more than a minute ahead of the portal's clock is refused (400)",
  ),
  reason: optional(
    param.lookupReason,
    'why you look this up (1–200 characters, kept in the audit log); required unless `lookups.requireReason.attribution` is false',
  ),
});
const statsParams = z.object({
  profile_id: optional(param.profileId, 'only this profile'),
  since: optional(param.date, 'first day, YYYY-MM-DD (UTC)'),
  until: optional(param.date, 'last day, YYYY-MM-DD (UTC)'),
});
const profilesParams = z.object({});
const auditLogParams = z.object({
  since: optional(param.timestamp, 'ISO 8601 date or date-time (with Z or an offset): entries at or after it'),
  until: optional(param.timestamp, 'ISO 8601 date or date-time: entries before it'),
  key: optional(
    param.keyName,
    "only calls made with the admin key of this name (`secret`: the specification's secret)",
  ),
  user_id: optional(param.userId, 'only calls about this user'),
  cursor: optional(param.auditCursor, 'the `next_cursor` of the page before'),
  limit: optional(param.pageSize, 'entries per page, 1–1000 (default 100)'),
});
const extendParams = z.object({
  user_id: required(param.userId, 'the user owning the configuration'),
  connection_id: required(param.connectionId, 'WireGuard public key or OpenVPN certificate Common Name'),
  expires_in: optional(
    param.sessionExpiry,
    "ISO 8601 duration from now, as for create: `sessionExpiry` (the default) or an entry of `supportedSessionExpiry`; capped by the CA's end; never earlier than the current expiry",
  ),
});
const webhooksParams = z.object({});
const createWebhookParams = z.object({
  url: required(
    param.webhookUrl,
    'where events are POSTed: http: or https:, not a private or loopback address unless webhooks.allowPrivateTargets allows it',
  ),
  event_types: required(
    param.webhookEventTypes,
    'comma-separated event types (`user.created,node.down`), or `*` for every type',
  ),
  description: optional(param.description, 'what the receiver is, for the people reading the list'),
});
const deleteWebhookParams = z.object({ webhook_id: required(param.webhookId, 'the subscription') });
const rotateWebhookSecretParams = z.object({
  webhook_id: required(param.webhookId, 'the subscription'),
  overlap: optional(
    param.secretOverlap,
    'ISO 8601 duration, at most P7D (default P1D): how long deliveries carry both signatures',
  ),
});
const testWebhookParams = z.object({ webhook_id: required(param.webhookId, 'the subscription') });
const webhookDeliveriesParams = z.object({
  webhook_id: optional(param.webhookId, 'only deliveries to this subscription'),
  event_type: optional(param.webhookEventType, 'only events of this type'),
  event_id: optional(param.uuid, 'only this event (its `id`)'),
  state: optional(param.deliveryState, 'pending, delivered, failed or cancelled'),
  since: optional(param.timestamp, 'ISO 8601 date or date-time: deliveries made at or after it'),
  until: optional(param.timestamp, 'ISO 8601 date or date-time: deliveries made before it'),
  cursor: optional(param.uuid, 'the `next_cursor` of the page before'),
  limit: optional(param.pageSize, 'deliveries per page, 1–1000 (default 100)'),
});
const enrollmentTokenParams = z.object({
  user_id: required(param.userId, 'the user the configuration will belong to (made when missing, as by create)'),
  profile_id: required(param.profileId, 'identifier of the VPN profile'),
  display_name: optional(param.displayName, 'label of the configuration, 1–64 characters; default `Enrollment`'),
  expires_in: optional(
    param.sessionExpiry,
    "the configuration's lifetime from its redemption, as create's `expires_in`",
  ),
  uses: optional(param.tokenUses, 'how many configurations the token can make, 1–1000 (default 1)'),
  valid_for: optional(
    param.isoDuration,
    'ISO 8601 duration the token can be redeemed for, at most P90D (default PT1H)',
  ),
  ...deviceParamShape,
});
const enrollmentTokensParams = z.object({ user_id: optional(param.userId, "only this user's tokens") });
const revokeEnrollmentTokenParams = z.object({
  user_id: required(param.userId, 'the user the token is for'),
  token_id: required(param.tokenId, "the token's id, as enrollment_token answered and enrollment_tokens lists it"),
});
const revocationParams = z.object({
  revocation_id: required(
    param.uuid,
    'the `VPN-Portal-Revocation` header of disable_user, destroy or delete_connection',
  ),
});
const revocationsParams = z.object({
  state: optional(param.revocationState, '`pending` (also lists overdue ones), `overdue`, `applied` or `superseded`'),
  user_id: optional(param.userId, "only this user's receipts"),
  limit: optional(param.pageSize, 'receipts at most, 1–1000 (default 100)'),
});
const registerDeviceParams = z.object({
  user_id: required(param.userId, 'the user the device belongs to'),
  profile_id: required(param.profileId, 'the profile its enrollment uses unless a call names another'),
  platform: required(param.platform, PLATFORM_LIST),
  serial: optional(
    param.deviceIdentifier,
    'its serial number (1–255 printable characters); unique among devices not retired',
  ),
  mdm_id: optional(
    param.deviceIdentifier,
    "the MDM's id of it; unique among devices not retired. `serial` or `mdm_id` (or both) is needed",
  ),
});
const devicesParams = z.object({
  user_id: optional(param.userId, "only this user's devices"),
  profile_id: optional(param.profileId, 'only devices of this profile'),
  platform: optional(param.platform, `only this platform: ${PLATFORM_LIST}`),
  state: optional(param.deviceState, '`registered`, `active`, `suspended` or `retired`'),
  identity: optional(param.deviceIdentity, '`token` or `certificate`'),
  serial: optional(param.deviceIdentifier, 'only the devices with this serial number'),
  mdm_id: optional(param.deviceIdentifier, 'only the devices with this MDM id'),
  last_seen_before: optional(
    param.timestamp,
    'ISO 8601: devices last seen before it, or never seen and registered before it',
  ),
  cursor: optional(param.deviceId, 'the `next_cursor` of the page before'),
  limit: optional(param.pageSize, 'devices per page, 1–1000 (default 100)'),
});
const deviceParams = z.object({ device_id: required(param.deviceId, 'the device') });
const retireDeviceParams = z.object({ device_id: required(param.deviceId, 'the device') });
const suspendDeviceParams = z.object({
  device_id: required(param.deviceId, 'the device (registered or active; a suspended one is answered as it is)'),
  reason: optional(
    param.suspensionReason,
    'why, 1–200 characters (default `administrator`); the metrics count `administrator`, `noncompliant`, `stale` and `jamf-group` by name, any other as `other`',
  ),
});
const resumeDeviceParams = z.object({
  device_id: required(param.deviceId, 'the device (a device not suspended is answered as it is)'),
});
const adminKeysParams = z.object({});
const createAdminKeyParams = z.object({
  name: required(
    param.keyName,
    'the key name: 1–64 of A-Z a-z 0-9 . _ - (starting with a letter or digit), not `secret`, not in use',
  ),
  scope: optional(
    z.enum(KEY_SCOPES),
    '`read`, `write` or `admin` (default `read`), or `scim`: SCIM provisioning only (docs/scim.md)',
  ),
  profiles: optional(param.commaList, 'comma-separated profile ids the key is limited to; default every profile'),
  expires_in: optional(
    param.isoDuration,
    'ISO 8601 duration, at most P100Y, after which the key stops working; default never',
  ),
  allow_list: optional(
    param.commaList,
    'comma-separated CIDR prefixes the key may be used from, on top of adminApi.allowList',
  ),
});
const revokeAdminKeyParams = z.object({ name: required(param.keyName, 'the key name') });
const createLegalHoldParams = z.object({
  user_id: optional(param.userId, "the user whose records are kept (also a destroyed user's, while records name them)"),
  device_id: optional(param.deviceId, "a registered device (retired too): its user's records are kept"),
  reason: required(param.legalHoldReason, 'why (a case number, an order): 1–500 characters'),
  until: required(param.timestamp, 'when the hold ends by itself: in the future, at most 10 years ahead'),
});
const legalHoldsParams = z.object({});
const releaseLegalHoldParams = z.object({ hold_id: required(param.legalHoldId, 'the hold') });

/** The parameters of the calls that take some, as a client sends them. */
export type CreateParams = SentParams<typeof createParams>;
export type ExtendParams = SentParams<typeof extendParams>;
export type EnrollmentTokenParams = SentParams<typeof enrollmentTokenParams>;
export type RegisterDeviceParams = SentParams<typeof registerDeviceParams>;
export type SuspendDeviceParams = SentParams<typeof suspendDeviceParams>;
export type CreateWebhookParams = SentParams<typeof createWebhookParams>;
export type AuditLogQuery = SentParams<typeof auditLogParams>;
export type ConnectionLogQuery = SentParams<typeof connectionLogParams>;
export type AttributionQuery = SentParams<typeof attributionParams>;
export type StatsQuery = SentParams<typeof statsParams>;
export type WebhookDeliveriesQuery = SentParams<typeof webhookDeliveriesParams>;
export type RevocationsQuery = SentParams<typeof revocationsParams>;
export type DevicesQuery = SentParams<typeof devicesParams>;
/** The extension parameters of `users` and `disabled_users` (the same for both). */
export type UsersQuery = SentParams<typeof usersParams>;
export type CreateAdminKeyParams = SentParams<typeof createAdminKeyParams>;
export type CreateLegalHoldParams = SentParams<typeof createLegalHoldParams>;

/** One entry of the audit log: an Admin API call that changed something, or was refused or failed. */
export const auditEntrySchema = z.object({
  id: z.string().describe('opaque, ordered by time; pass the last one seen as `cursor` for older entries'),
  at: z.string().describe('ISO 8601 with numeric UTC offset'),
  key_name: z
    .string()
    .nullable()
    .describe("the admin key's name, `secret` for the specification's secret, null when no valid key was presented"),
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

/** What `extend` answers (extension): the configuration's new expiry, and for OpenVPN its new certificate. */
export const extendAnswer = z.object({
  connection_id: z.string(),
  vpn_proto: z.enum(['wireguard', 'openvpn']),
  expires_at: z.string().describe('the new expiry, ISO 8601 with numeric UTC offset'),
  certificate: z
    .string()
    .nullable()
    .describe(
      "OpenVPN: the new client certificate (PEM) for the device's own key, to replace the file's `<cert>` block; WireGuard: null",
    ),
});
export type ExtendAnswer = z.infer<typeof extendAnswer>;

/** A legal hold: one user's (or a device's user's) records kept past their retention. */
export const legalHoldSchema = z.object({
  hold_id: z.string(),
  user_id: z.string().describe("the user whose records are kept (a device hold's: the device's user)"),
  device_id: z.string().nullable().describe('the device the hold was made for; null: made for the user'),
  reason: z.string(),
  created_at: z.string(),
  until: z.string().describe('when it ends by itself'),
  released_at: z.string().nullable(),
  state: z.enum(['active', 'released', 'expired']),
});
export type LegalHoldInfo = z.infer<typeof legalHoldSchema>;
export const legalHoldAnswer = z.object({ legal_hold: legalHoldSchema });
export const legalHoldsAnswer = z.object({
  legal_holds: z.array(legalHoldSchema).describe('newest first; ended ones until the housekeeping prunes them'),
});

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
  previous_secret_until: z
    .string()
    .describe('until then every delivery carries a signature with the previous secret too'),
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

/** What `enrollment_token` answers (extension): the token, shown once, and how long and how often it can be redeemed. */
export const enrollmentTokenAnswer = z.object({
  enrollment_token: z.string().describe('the token (`vpe_…`); shown once, the portal keeps only a keyed hash'),
  token_id: z
    .string()
    .describe("the token's id (its characters 5–16), for `enrollment_tokens` and `revoke_enrollment_token`"),
  expires_at: z.string().describe('until when it can be redeemed, ISO 8601 with numeric UTC offset'),
  uses: z.int().describe('how many configurations it can make'),
});
export type EnrollmentTokenAnswer = z.infer<typeof enrollmentTokenAnswer>;

/** An enrollment token as `enrollment_tokens` lists it (never the token itself). */
export const enrollmentTokenInfoSchema = z.object({
  token_id: z.string(),
  user_id: z.string(),
  profile_id: z.string(),
  display_name: z.string().nullable(),
  expires_in: z.string().nullable().describe("the configuration's lifetime; null: sessionExpiry"),
  uses: z.int(),
  uses_left: z.int(),
  state: z
    .enum(['usable', 'used-up', 'expired', 'revoked', 'profile-removed'])
    .describe('profile-removed: usable but for its profile, which left the configuration (redeeming it answers 410)'),
  created_at: z.string(),
  created_by: z.string().nullable().describe("the admin key that made it (`secret` for the specification's secret)"),
  expires_at: z.string(),
  revoked_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
});
export type EnrollmentTokenInfo = z.infer<typeof enrollmentTokenInfoSchema>;
export const enrollmentTokensAnswer = z.object({
  enrollment_tokens: z.array(enrollmentTokenInfoSchema).describe('newest first'),
});

/** A revocation receipt (extension): which configurations left which nodes, and when each node confirmed it. */
export const revocationSchema = z.object({
  revocation_id: z.string(),
  user_id: z.string(),
  reason: z
    .enum(['disable_user', 'destroy', 'delete_connection', 'retire_device', 'suspend_device', 'replaced', 'expiry'])
    .describe("what revoked the configurations (replaced: a device's new configuration in the same profile)"),
  state: z
    .enum(['pending', 'overdue', 'applied', 'superseded'])
    .describe(
      'applied: every node confirmed; overdue: a node is pending past revocationDeadline; superseded: enable_user (resume_device for a suspension) came first',
    ),
  requested_at: z.string(),
  overdue_at: z.string().nullable(),
  applied_at: z.string().nullable(),
  superseded_at: z.string().nullable(),
  connection_ids: z.array(z.string()),
  nodes: z.array(
    z.object({
      node_number: z.int(),
      state: z.enum(['pending', 'applied']),
      applied_at: z
        .string()
        .nullable()
        .describe('when the node confirmed its last configuration gone; null while pending'),
      connection_ids: z.array(z.string()),
    }),
  ),
});
export type RevocationInfo = z.infer<typeof revocationSchema>;
export const revocationsAnswer = z.object({ revocations: z.array(revocationSchema).describe('newest first') });

/** The public endpoint, below `{base_url}`, where a device redeems an enrollment token (no admin key). */
export const ENROLL_PATH = 'enroll';

/** The form fields a device sends to `enroll` with a token. */
export const ENROLL_PARAMS = z.object({
  enrollment_token: required(param.enrollmentToken, 'the token (`vpe_…`) the administrator handed out'),
  public_key: optional(param.devicePublicKey, "the device's own WireGuard public key (Base64 of 32 bytes)"),
  csr: optional(param.certificateRequest, "the device's own OpenVPN key as a PEM PKCS#10 certificate request"),
  prefer_tcp: optional(param.yesNo, '`yes` or `no` (default): prefer connecting over TCP'),
});

/** The form fields a device sends to `enroll` with its MDM certificate instead of a token. */
export const CERTIFICATE_ENROLL_PARAMS = z.object({
  public_key: optional(param.devicePublicKey, "the device's own WireGuard public key (Base64 of 32 bytes)"),
  csr: optional(param.certificateRequest, "the device's own OpenVPN key as a PEM PKCS#10 certificate request"),
  prefer_tcp: optional(param.yesNo, '`yes` or `no` (default): prefer connecting over TCP'),
  profile_id: optional(param.profileId, "must be the registered device's profile when sent"),
  platform: optional(param.platform, "must be the registered device's platform when sent"),
});

/** A registered managed device (extension) with its configurations. */
export const deviceSchema = z.object({
  device_id: z.string().describe("the portal's own id (`dev_…`), stable for the device's life"),
  user_id: z.string(),
  profile_id: z.string().describe('the profile its enrollment uses unless a call names another'),
  platform: platformSchema,
  serial: z.string().nullable().describe('the serial number its MDM knows it by'),
  mdm_id: z.string().nullable().describe("the MDM's own id of the device (e.g. Intune's managed device id)"),
  identity: z
    .enum(['token', 'certificate'])
    .describe('how it proves itself when it enrolls: a token, or its MDM certificate'),
  certificate: z
    .object({ subject: z.string(), issuer: z.string(), serial_number: z.string(), not_after: z.string() })
    .nullable()
    .describe('with identity `certificate`: the certificate it is bound to'),
  state: z
    .enum(DEVICE_STATES)
    .describe(
      '`registered` until its first configuration, then `active`; `suspended` (its configurations off every node) until resumed; `retired` for good',
    ),
  suspension: z
    .object({
      reason: z.string(),
      since: z.string().describe('ISO 8601'),
      by: z.string().describe('the admin key name, `mdm`, `(portal)`, …'),
      other_reasons: z
        .array(
          z.object({
            reason: z.string(),
            since: z.string().describe('ISO 8601'),
            by: z.string(),
          }),
        )
        .describe(
          "the other reasons it stays suspended for (the MDM's compliance, Jamf Pro, a reason an administrator took over), oldest first: the MDM's checks and Jamf Pro end only their own reason, and the device stays suspended while another stands; `resume_device` ends them all",
        ),
    })
    .nullable()
    .describe('while `suspended`: why, since when, by whom; else null'),
  created_at: z.string(),
  retired_at: z.string().nullable(),
  last_seen_at: z.string().nullable().describe('when a session of one of its configurations last started'),
  configurations: z
    .array(
      z.object({
        connection_id: z.string(),
        profile_id: z.string(),
        vpn_proto: z.enum(['wireguard', 'openvpn']),
        expires_at: z.string(),
      }),
    )
    .describe('its live configurations, at most one per profile'),
});
export type DeviceInfo = z.infer<typeof deviceSchema>;
export const deviceAnswer = z.object({ device: deviceSchema });
/** One change of a device's state (extension), as GET /device lists them. */
export const deviceHistoryEntrySchema = z.object({
  at: z.string().describe('ISO 8601'),
  change: z
    .enum(['registered', 'enrolled', 'suspended', 'resumed', 'retired'])
    .describe('`enrolled`: a configuration was issued to it'),
  state_before: deviceSchema.shape.state
    .nullable()
    .describe('null for a registration, and for changes from before the history was kept'),
  state_after: deviceSchema.shape.state,
  reason: z
    .string()
    .nullable()
    .describe("the change's reason (a suspension's, `token …` or `certificate …` of an enrollment)"),
  by: z
    .string()
    .nullable()
    .describe('who made it: the admin key name, `mdm`, `(portal)`, `(device)`, …; null when not recorded'),
  revocation_id: z
    .string()
    .nullable()
    .describe('the revocation receipt of the configurations it took off the nodes, if any'),
});
export type DeviceHistoryEntryInfo = z.infer<typeof deviceHistoryEntrySchema>;
export const deviceWithHistoryAnswer = z.object({
  device: deviceSchema,
  history: z.array(deviceHistoryEntrySchema).describe("every change of the device's state, oldest first"),
});
export const devicesAnswer = z.object({
  devices: z.array(deviceSchema).describe('newest first'),
  next_cursor: z.string().nullable().describe('pass as `cursor` for the next (older) page; null on the last page'),
});
export type DevicesPage = z.infer<typeof devicesAnswer>;

/** An admin key as `admin_keys` lists it (extension, for the console and tools): its rights and use, never its secret. */
export const adminKeyInfoSchema = z.object({
  key_id: z.string().describe("the key's id (the characters after `vpa_` that name its row); not a secret"),
  name: z.string(),
  scope: z.enum(KEY_SCOPES),
  profiles: z.array(z.string()).nullable().describe('the profiles it is limited to; null: every profile'),
  allow_list: z
    .array(z.string())
    .nullable()
    .describe('the address prefixes it may be used from, on top of adminApi.allowList; null: no own limit'),
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
export const adminKeysAnswer = z.object({
  admin_keys: z.array(adminKeyInfoSchema).describe('by name, newest first within a name'),
});
export const createAdminKeyAnswer = z.object({
  admin_key: adminKeyInfoSchema,
  secret: z.string().describe('the key itself (`vpa_…`): shown this once, the portal keeps only a keyed hash'),
});
export const revokeAdminKeyAnswer = z.object({
  name: z.string(),
  revoked: z
    .int()
    .describe("how many keys of the name were revoked: the current one and any in a rotation's grace period"),
});

/** The answer of a call that answers no body (204), at most headers (a revocation's receipt id). */
export const NO_BODY = 'no body';
/** The answer of `create`: a configuration file, in the format the Accept header chose (CONFIGURATION_MEDIA_TYPES). */
export const CONFIGURATION_FILE = 'configuration file';
/** What a call answers when it succeeds: JSON its schema describes, no body, or a configuration file. */
export type CallAnswer = z.ZodType | typeof NO_BODY | typeof CONFIGURATION_FILE;
/** The JSON body a call answers (the route's handler must give exactly this type). */
export type AnswerBody<A extends CallAnswer> = A extends z.ZodType ? z.infer<A> : never;

/** The status of a call's answer when it succeeds. */
export function successStatusOf(answer: CallAnswer): 200 | 204 {
  return answer === NO_BODY ? 204 : 200;
}

/**
 * Method, path (below `{base_url}/admin/api/v1`), needed scope, parameters and answer of every
 * call: the specification's eleven in its order, then the portal's own (`connection_log`,
 * `stats`, `audit_log`, `extend`, the webhook calls, the enrollment tokens, …). The routes, the
 * OpenAPI document, docs/admin-api.md, the typed client and the console take them from here.
 */
export const ADMIN_API_CALLS = {
  connectedUsers: {
    method: 'GET',
    path: '/connected_users',
    scope: 'read',
    params: connectedUsersParams,
    answer: connectedUsersAnswer,
  },
  connectionList: {
    method: 'GET',
    path: '/connection_list',
    scope: 'read',
    params: connectionListParams,
    answer: connectionListAnswer,
  },
  users: { method: 'GET', path: '/users', scope: 'read', params: usersParams, answer: usersAnswer },
  disabledUsers: {
    method: 'GET',
    path: '/disabled_users',
    scope: 'read',
    params: disabledUsersParams,
    answer: disabledUsersAnswer,
  },
  userConfigurationList: {
    method: 'GET',
    path: '/user_configuration_list',
    scope: 'read',
    params: userConfigurationListParams,
    answer: userConfigurationListAnswer,
  },
  create: { method: 'POST', path: '/create', scope: 'write', params: createParams, answer: CONFIGURATION_FILE },
  destroy: { method: 'POST', path: '/destroy', scope: 'admin', params: destroyParams, answer: NO_BODY },
  disableUser: { method: 'POST', path: '/disable_user', scope: 'write', params: disableUserParams, answer: NO_BODY },
  enableUser: { method: 'POST', path: '/enable_user', scope: 'write', params: enableUserParams, answer: NO_BODY },
  deleteConnection: {
    method: 'POST',
    path: '/delete_connection',
    scope: 'write',
    params: deleteConnectionParams,
    answer: NO_BODY,
  },
  deleteUserAuthorizations: {
    method: 'POST',
    path: '/delete_user_authorizations',
    scope: 'admin',
    params: deleteUserAuthorizationsParams,
    answer: NO_BODY,
  },
  // Extensions of this portal.
  connectionLog: {
    method: 'GET',
    path: '/connection_log',
    scope: 'read',
    params: connectionLogParams,
    answer: connectionLogAnswer,
  },
  attribution: {
    method: 'GET',
    path: '/attribution',
    scope: 'read',
    params: attributionParams,
    answer: attributionAnswer,
  },
  stats: { method: 'GET', path: '/stats', scope: 'read', params: statsParams, answer: statsAnswer },
  profiles: { method: 'GET', path: '/profiles', scope: 'read', params: profilesParams, answer: profilesAnswer },
  auditLog: { method: 'GET', path: '/audit_log', scope: 'admin', params: auditLogParams, answer: auditLogAnswer },
  extend: { method: 'POST', path: '/extend', scope: 'write', params: extendParams, answer: extendAnswer },
  webhooks: { method: 'GET', path: '/webhooks', scope: 'admin', params: webhooksParams, answer: webhooksAnswer },
  createWebhook: {
    method: 'POST',
    path: '/create_webhook',
    scope: 'admin',
    params: createWebhookParams,
    answer: createWebhookAnswer,
  },
  deleteWebhook: {
    method: 'POST',
    path: '/delete_webhook',
    scope: 'admin',
    params: deleteWebhookParams,
    answer: NO_BODY,
  },
  rotateWebhookSecret: {
    method: 'POST',
    path: '/rotate_webhook_secret',
    scope: 'admin',
    params: rotateWebhookSecretParams,
    answer: rotateWebhookSecretAnswer,
  },
  testWebhook: {
    method: 'POST',
    path: '/test_webhook',
    scope: 'admin',
    params: testWebhookParams,
    answer: testWebhookAnswer,
  },
  webhookDeliveries: {
    method: 'GET',
    path: '/webhook_deliveries',
    scope: 'admin',
    params: webhookDeliveriesParams,
    answer: webhookDeliveriesAnswer,
  },
  createLegalHold: {
    method: 'POST',
    path: '/create_legal_hold',
    scope: 'admin',
    params: createLegalHoldParams,
    answer: legalHoldAnswer,
  },
  legalHolds: {
    method: 'GET',
    path: '/legal_holds',
    scope: 'admin',
    params: legalHoldsParams,
    answer: legalHoldsAnswer,
  },
  releaseLegalHold: {
    method: 'POST',
    path: '/release_legal_hold',
    scope: 'admin',
    params: releaseLegalHoldParams,
    answer: legalHoldAnswer,
  },
  enrollmentToken: {
    method: 'POST',
    path: '/enrollment_token',
    scope: 'write',
    params: enrollmentTokenParams,
    answer: enrollmentTokenAnswer,
  },
  enrollmentTokens: {
    method: 'GET',
    path: '/enrollment_tokens',
    scope: 'read',
    params: enrollmentTokensParams,
    answer: enrollmentTokensAnswer,
  },
  revokeEnrollmentToken: {
    method: 'POST',
    path: '/revoke_enrollment_token',
    scope: 'write',
    params: revokeEnrollmentTokenParams,
    answer: NO_BODY,
  },
  revocation: {
    method: 'GET',
    path: '/revocation',
    scope: 'read',
    params: revocationParams,
    answer: revocationSchema,
  },
  revocations: {
    method: 'GET',
    path: '/revocations',
    scope: 'read',
    params: revocationsParams,
    answer: revocationsAnswer,
  },
  registerDevice: {
    method: 'POST',
    path: '/register_device',
    scope: 'write',
    params: registerDeviceParams,
    answer: deviceAnswer,
  },
  devices: { method: 'GET', path: '/devices', scope: 'read', params: devicesParams, answer: devicesAnswer },
  device: { method: 'GET', path: '/device', scope: 'read', params: deviceParams, answer: deviceWithHistoryAnswer },
  retireDevice: {
    method: 'POST',
    path: '/retire_device',
    scope: 'write',
    params: retireDeviceParams,
    answer: deviceAnswer,
  },
  suspendDevice: {
    method: 'POST',
    path: '/suspend_device',
    scope: 'write',
    params: suspendDeviceParams,
    answer: deviceAnswer,
  },
  resumeDevice: {
    method: 'POST',
    path: '/resume_device',
    scope: 'write',
    params: resumeDeviceParams,
    answer: deviceAnswer,
  },
  adminKeys: { method: 'GET', path: '/admin_keys', scope: 'admin', params: adminKeysParams, answer: adminKeysAnswer },
  createAdminKey: {
    method: 'POST',
    path: '/create_admin_key',
    scope: 'admin',
    params: createAdminKeyParams,
    answer: createAdminKeyAnswer,
  },
  revokeAdminKey: {
    method: 'POST',
    path: '/revoke_admin_key',
    scope: 'admin',
    params: revokeAdminKeyParams,
    answer: revokeAdminKeyAnswer,
  },
} as const satisfies Record<string, AdminApiCall>;

/** One call's definition, as ADMIN_API_CALLS holds it. */
export interface AdminApiCall {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly scope: AdminScope;
  readonly params: ParamsSchema;
  readonly answer: CallAnswer;
}
export type AdminApiCallName = keyof typeof ADMIN_API_CALLS;
/** The JSON body a call answers, by the call's name in ADMIN_API_CALLS. */
export type AnswerOf<C extends AdminApiCallName> = AnswerBody<(typeof ADMIN_API_CALLS)[C]['answer']>;
