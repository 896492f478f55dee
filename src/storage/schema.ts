// Row types of every table, as Kysely sees them. Times are ATOM strings in UTC
// (see src/shared/time.ts); booleans are stored as 0/1 so SQLite and PostgreSQL agree.
import type { ColumnType, Generated, RawBuilder } from 'kysely';

export interface UsersTable {
  user_id: string;
  created_at: string;
  last_seen: string;
  /** JSON array of permission strings; always `[]` for users made by the Admin API. */
  permission_list: Generated<string>;
  auth_data: string | null;
  is_disabled: Generated<number>;
  /**
   * Who disabled the user (an admin key's name, `(scim)`, `(eduvpn import)` for one the import brought
   * disabled, …); null while enabled, and for users disabled before migration 0036 (0045 for the import's).
   */
  disabled_by: string | null;
}

export interface OAuthAuthorizationsTable {
  auth_key: string;
  user_id: string;
  client_id: string;
  scope: string;
  authorized_at: string;
  expires_at: string;
}

export interface WireGuardPeersTable {
  public_key: string;
  user_id: string;
  profile_id: string;
  node_number: number;
  display_name: string;
  ip_four: string;
  ip_six: string;
  /** Position of the address pair in the node's range: index 0 is network+2 (reference §6.2). */
  pool_index: number;
  created_at: string;
  expires_at: string;
  /** null for configurations made through the Admin API (and the portal); set for app (OAuth) ones. */
  auth_key: string | null;
  /** Change counter value of the last change to whether this peer belongs on its node (src/storage/revisions.ts). */
  revision: ColumnType<string | number, string | number | RawBuilder<unknown>, string | number | RawBuilder<unknown>>;
  /** 1 once `configuration.expiring` was announced, or when none is wanted; 0 while it is to come. */
  expiry_warned: number;
  /** The device it was issued to (devices.device_id); null: made for a user only. */
  device_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Address pool of one profile on one node: the next never-used index. */
export interface IpPoolsTable {
  profile_id: string;
  node_number: number;
  range_four: string;
  range_six: string;
  next_index: number;
}

/** Indexes below `next_index` that were handed out and given back, reused lowest first. */
export interface IpPoolFreeTable {
  profile_id: string;
  node_number: number;
  range_four: string;
  range_six: string;
  pool_index: number;
}

/** One row per OpenVPN configuration: its client certificate's Common Name (reference §9). */
export interface CertificatesTable {
  common_name: string;
  user_id: string;
  profile_id: string;
  node_number: number;
  display_name: string;
  created_at: string;
  expires_at: string;
  auth_key: string | null;
  /** Base64 of the DER SubjectPublicKeyInfo of a device's own key (from its CSR); null: the portal made the key. */
  public_key: string | null;
  /** As in wg_peers. */
  expiry_warned: number;
  /** As in wg_peers. */
  device_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** One row per OpenVPN connection, opened on connect and closed on disconnect. */
export interface ConnectionLogTable {
  log_id: string;
  user_id: string;
  profile_id: string;
  vpn_proto: string;
  connection_id: string;
  node_number: number;
  ip_four: string;
  ip_six: string;
  originating_ip: string | null;
  connected_at: string;
  disconnected_at: string | null;
  /** bigint: PostgreSQL hands these over as strings. */
  bytes_in: number | string | null;
  bytes_out: number | string | null;
}

/** Nodes an administrator allowed to be emptied by a database that never held a configuration for them. */
export interface NodeResetsTable {
  node_number: number;
  confirmed_at: string;
}

/** Connections online per profile, written by every full reconcile pass (reference §9). */
export interface LiveStatsTable {
  date_time: string;
  profile_id: string;
  connection_count: number;
  unique_user_count: number;
}

/** One row per day and profile, made by housekeeping from the day's history (reference §9). */
export interface AggregateStatsTable {
  /** YYYY-MM-DD, UTC. */
  date: string;
  profile_id: string;
  max_connection_count: number;
  unique_user_count: number;
}

/** What portal instances must agree on, by name (e.g. the day housekeeping last ran). */
export interface PortalStateTable {
  key: string;
  value: string;
}

/** One shard of the listing generation (src/storage/listing-generation.ts); bigint, text on PostgreSQL. */
export interface ListingGenerationTable {
  shard: number;
  generation: ColumnType<string | number, number, number>;
}

/** One admin key (src/keys/admin-key-token.ts): only its keyed hash is stored. */
export interface AdminKeysTable {
  key_id: string;
  name: string;
  scope: string;
  /** JSON array of profile ids; null: every profile. */
  profiles: string | null;
  /** JSON array of CIDR prefixes; null: only `adminApi.allowList` applies. */
  allow_list: string | null;
  /** HMAC-SHA-256 of the key under the pepper, hex. */
  secret_hash: string;
  created_at: string;
  expires_at: string | null;
  lifetime: string | null;
  revoked_at: string | null;
  /** Set when the key was rotated: the key that replaced it (this one ends with its grace period). */
  replaced_by: string | null;
  /** The id of the first key of its line: a rotation keeps it, a new key with a reused name does not. */
  lineage: string;
  last_used_at: string | null;
  last_used_address: string | null;
}

/** One Admin API call that changed something, or was refused or failed. */
export interface AuditLogTable {
  audit_id: string;
  at: string;
  key_name: string | null;
  source_address: string;
  call: string;
  /** JSON object of the parameters as sent. */
  parameters: string;
  status: number;
  user_id: string | null;
  /** JSON array of the configurations the call created or deleted. */
  connection_ids: string;
  detail: string | null;
  /** Refusals of the row's bucket after the row's own (src/storage/audit-log.ts); 0 for every other row. */
  repeated: number;
  /** The hash of a refusal's bucket (minute, source, reason), unique; null for every other row. */
  refusal_bucket: string | null;
}

/** A POST sent with an Idempotency-Key: reserved while it runs, then its answer (sealed) for 24 h. */
export interface IdempotencyRecordsTable {
  /** The admin key lineage (admin_keys.lineage) that sent the request; `secret` for the secret. */
  key_lineage: string;
  idempotency_key: string;
  call: string;
  fingerprint: string;
  owner: string;
  /**
   * `pending` while its request runs, `done` with its answer; once what the answer handed out was
   * revoked `revoked`, or replaced `replaced` (its answer dropped either way); `not-kept` when an
   * answer holding a secret, kept before it named what it handed out, was dropped on upgrade (0042).
   */
  state: string;
  status: number | null;
  answer: string | null;
  created_at: string;
  expires_at: string;
  /**
   * What the kept answer hands out that can be taken back (src/storage/idempotency.ts,
   * HandedOutKind): `configuration`, `admin-key`, `webhook-secret`, `enrollment-token`; null for
   * the other calls' answers, and before migrations 0039 and 0041 (0042 dropped those answers of
   * the calls above: `not-kept`).
   */
  handed_out_kind: string | null;
  /** Its id: public key or Common Name, admin key id, webhook id, enrollment token id. */
  handed_out_id: string | null;
}

/** A webhook subscription; its secrets are sealed (src/keys/answer-cipher.ts). */
export interface WebhooksTable {
  webhook_id: string;
  url: string;
  /** JSON array of event types; `["*"]`: every type. */
  event_types: string;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  created_at: string;
  /** Attempts in a row that got no answer at all (0 once one is answered, whatever its status). */
  unanswered: Generated<number>;
  /** The receiver gets no attempt before this (ATOM); null: it does not rest. */
  rest_until: string | null;
}

/** One event for one subscription: the outbox row and, once done, its entry in the delivery log. */
export interface WebhookDeliveriesTable {
  delivery_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  created_at: string;
  state: string;
  attempts: number;
  next_attempt_at: string;
  lease_until: string | null;
  lease_token: string | null;
  finished_at: string | null;
}

/** One attempt at a delivery. */
export interface WebhookAttemptsTable {
  delivery_id: string;
  attempt: number;
  started_at: string;
  outcome: string;
  status: number | null;
  duration_ms: number | null;
  detail: string | null;
}

/** An enrollment token (src/keys/enrollment-token.ts): only its keyed hash is stored. */
export interface EnrollmentTokensTable {
  token_id: string;
  /** HMAC-SHA-256 of the token under the admin keys' pepper, hex. */
  secret_hash: string;
  user_id: string;
  profile_id: string;
  display_name: string | null;
  /** ISO 8601 lifetime of the configuration it makes; null: sessionExpiry. */
  expires_in: string | null;
  uses: number;
  uses_left: number;
  created_at: string;
  created_by: string | null;
  expires_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
  /** The device the configuration is made for; null: for the user only. */
  device_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** A managed device (src/storage/devices.ts). */
export interface DevicesTable {
  device_id: string;
  user_id: string;
  profile_id: string;
  platform: string;
  serial: string | null;
  mdm_id: string | null;
  /** `token` or `certificate`. */
  identity: string;
  certificate_subject: string | null;
  certificate_issuer: string | null;
  certificate_serial: string | null;
  certificate_not_after: string | null;
  /** SHA-256 (hex) of the CA certificate that issued it, as enrolled; null before migration 0048. */
  certificate_issuer_fingerprint: string | null;
  /** `registered`, `active`, `suspended` or `retired`. */
  state: string;
  created_at: string;
  retired_at: string | null;
  last_seen_at: string | null;
  /** While suspended: why, since when and by whom; null otherwise. */
  suspended_reason: string | null;
  suspended_at: string | null;
  suspended_by: string | null;
  /**
   * While suspended: the other suspensions that still stand, each for another reason, as a JSON
   * array of { reason, since, by }, oldest first; null when there are none.
   */
  other_suspensions: string | null;
  /**
   * Jamf Pro's time (`webhook.eventTimestamp`, ISO 8601 with milliseconds) of the newest smart
   * group event applied to it; null before the first. An older event changes nothing.
   */
  jamf_event_at: string | null;
}

/** One change of a device's state (src/storage/device-history.ts). */
export interface DeviceHistoryTable {
  history_id: string;
  device_id: string;
  at: string;
  /** `registered`, `enrolled`, `suspended`, `resumed` or `retired`. */
  change: string;
  state_before: string | null;
  state_after: string;
  reason: string | null;
  /** The admin key name, `(portal)`, `mdm`, …; null when not recorded (before the history was kept). */
  changed_by: string | null;
  revocation_id: string | null;
  /** `enrolled`: the profile of the configuration issued; null for other changes and entries from before it was kept. */
  profile_id: string | null;
}

/** A revocation receipt (src/core/revocations/receipts.ts). */
export interface RevocationsTable {
  revocation_id: string;
  user_id: string;
  reason: string;
  state: string;
  requested_at: string;
  overdue_at: string | null;
  applied_at: string | null;
  superseded_at: string | null;
}

/** One configuration of a receipt on its node, and when the node confirmed it gone. */
export interface RevocationNodesTable {
  revocation_id: string;
  node_number: number;
  connection_id: string;
  vpn_proto: string;
  profile_id: string;
  applied_at: string | null;
}

/** A signed-in admin console (0017): the cookie's SHA-256, how it signed in, when it ends. */
export interface ConsoleSessionsTable {
  session_hash: string;
  method: string;
  key_id: string | null;
  subject: string;
  /** An HMAC under the admin key pepper of what the session signed in with: the secret, or an admin key's id. */
  secret_digest: string | null;
  /** OpenID sessions only: the scope and the profiles (JSON array; null: every profile) their claims granted. */
  scope: string | null;
  profiles: string | null;
  /** OpenID sessions only: SHA-256 (hex) of the `adminConsole.oidc` rules that granted them (migration 0059). */
  oidc_rules_digest: string | null;
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
}

/** An intermediate CA seen in an enrolled chain that led to a trust anchor (migration 0021). */
export interface CertificateAuthoritiesTable {
  /** SHA-256 of the DER certificate, hex. */
  fingerprint: string;
  subject: string;
  /** The DER certificate, base64. */
  certificate: string;
  first_seen_at: string;
}

/** A revocation list held because it would retire too many devices at once (migration 0021). */
export interface RevocationListHoldsTable {
  /** SHA-256 of the list's DER, hex. */
  sha256: string;
  issuer: string;
  location: string;
  devices: number;
  held_at: string;
  /** When an administrator confirmed it (`vpn-portal mdm confirm-crl`); null while it waits. */
  confirmed_at: string | null;
}

/** One row per change committed on PostgreSQL, read back when its COMMIT's answer was lost (src/storage/change-markers.ts). */
export interface ChangeMarkersTable {
  marker_id: string;
  /** Milliseconds since 1970, for pruning. */
  created_at: number;
  /** 1: left by a read back, which found no marker (the change did not commit); 0: the change's own marker. */
  tombstone: Generated<number>;
}

/** A legal hold on a user's (or a device's) records (migration 0024, src/storage/legal-holds.ts). */
export interface LegalHoldsTable {
  hold_id: string;
  user_id: string;
  /** The device the hold was made for; null: for the user. */
  device_id: string | null;
  reason: string;
  created_at: string;
  /** When it ends by itself (ATOM). */
  until: string;
  /** When an administrator released it; null: not released. */
  released_at: string | null;
}

/** A session being accounted for over RADIUS, from its Start until its Stop is queued. */
export interface RadiusSessionsTable {
  acct_session_id: string;
  connection_id: string;
  node_number: number;
  start_record: string;
  started_at: string;
  next_interim_at: string;
}

/** An Accounting-Request for one server, until the server acknowledged it or it was dropped. */
export interface RadiusOutboxTable {
  record_id: string;
  server: string;
  acct_session_id: string;
  connection_id: string;
  record: string;
  event_at: string;
  attempts: number;
  next_attempt_at: string;
  lease_until: string | null;
  lease_token: string | null;
  /** The tunnel address the record reports (IPv4, else IPv6; migration 0060): records of one address go in order. */
  address: string | null;
}

/** A NAT mapping a node put in force (migration 0025, src/storage/nat-mappings.ts). */
export interface NatMappingsTable {
  node_number: number;
  /** When the node says it applied it (ATOM); the portal's clock for `none`. */
  applied_at: string;
  /** `masquerade`, `deterministic` or `none`. */
  mode: string;
  /** deterministic: the client ranges and public addresses (JSON arrays) and the block size; null otherwise. */
  ranges: string | null;
  public_addresses: string | null;
  ports_per_client: number | null;
  recorded_at: string;
}

/** The directory's view of a portal user (migration 0027, src/storage/scim-users.ts). */
export interface ScimUsersTable {
  scim_id: string;
  user_id: string;
  external_id: string | null;
  /** The resource as the directory last sent it (JSON), without id, meta and active. */
  attributes: string;
  created_at: string;
  updated_at: string;
  /**
   * The group change whose check of the user's profiles is still to run (migration 0040,
   * src/core/directory/group-profiles.ts); null: none.
   */
  profile_check: string | null;
  /** When that change noted it (ATOM); null: nothing noted. */
  profile_check_at: string | null;
  /**
   * The key its userName is compared by, case-insensitive (migration 0057,
   * src/storage/scim-name-key.ts), unique; null only for a user made before 0057 whose name
   * differs only in case from an older one's.
   */
  user_name_key: string | null;
  /**
   * What the directory last said of the user's `active` (migration 0061): 1 active, 0 inactive,
   * null not said since (an administrator may not enable a user the directory calls inactive).
   */
  directory_active: number | null;
}

/** A directory group (migration 0027, src/storage/scim-groups.ts). */
export interface ScimGroupsTable {
  scim_id: string;
  display_name: string;
  external_id: string | null;
  created_at: string;
  updated_at: string;
  /**
   * The key a directory's displayName filter compares by, case-insensitive (migration 0062,
   * src/storage/scim-name-key.ts). The column takes null (SQLite adds no NOT NULL column
   * without a default); every row is written with its key, so the type does not.
   */
  display_name_key: string;
}

/** A SCIM user in a directory group (migration 0027, src/storage/scim-groups.ts). */
export interface ScimGroupMembersTable {
  group_id: string;
  member_id: string;
}

/** A user or configuration the eduVPN import brought, or left for good (migration 0035, src/storage/imported-records.ts). */
export interface ImportedRecordsTable {
  /** user, wireguard, openvpn or authorization (0037). */
  kind: string;
  /** The user id, WireGuard public key, OpenVPN common name or authorization key. */
  record_id: string;
  imported_at: string;
  /** A configuration's or authorization's expiry in eduVPN (ATOM); null for a user. */
  expires_at: string | null;
  /**
   * 1: a configuration not brought but left, its user disabled here then while eduVPN had it
   * enabled (migration 0044), so that no later run brings it either; 0: brought.
   */
  withheld: Generated<number>;
}

/** A user destroyed here, by a digest of its id (migration 0043, src/storage/destroyed-users.ts). */
/** A live device the last readable MDM inventory pass did not find (migration 0046). */
export interface RevocationListSourcesTable {
  /** The source as configured: a file's path or a URL. */
  location: string;
  /** The CA the lists believed from it name (their issuer). */
  issuer: string;
  /** The newest thisUpdate believed from it (ISO 8601): an older list is refused. */
  this_update: string;
  /** That list, DER in base64: in force again after a restart, before the source is read. */
  list: string;
}

export interface MdmInventoryMissesTable {
  device_id: string;
  /** When a pass first missed it (ATOM): the pass after that retires it if it is still missing. */
  first_missed_at: string;
}

export interface DestroyedUsersTable {
  user_digest: string;
  /** When it was last destroyed (ATOM). */
  destroyed_at: string;
  /** The digest of its id letter case aside (migration 0066); null for one destroyed before whose receipt was gone. */
  name_key_digest: string | null;
}

export interface Database {
  users: UsersTable;
  oauth_authorizations: OAuthAuthorizationsTable;
  wg_peers: WireGuardPeersTable;
  ip_pools: IpPoolsTable;
  ip_pool_free: IpPoolFreeTable;
  certificates: CertificatesTable;
  connection_log: ConnectionLogTable;
  nat_mappings: NatMappingsTable;
  node_resets: NodeResetsTable;
  live_stats: LiveStatsTable;
  aggregate_stats: AggregateStatsTable;
  portal_state: PortalStateTable;
  admin_keys: AdminKeysTable;
  audit_log: AuditLogTable;
  idempotency_records: IdempotencyRecordsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  listing_generation: ListingGenerationTable;
  enrollment_tokens: EnrollmentTokensTable;
  revocations: RevocationsTable;
  revocation_nodes: RevocationNodesTable;
  devices: DevicesTable;
  device_history: DeviceHistoryTable;
  console_sessions: ConsoleSessionsTable;
  certificate_authorities: CertificateAuthoritiesTable;
  revocation_list_holds: RevocationListHoldsTable;
  change_markers: ChangeMarkersTable;
  legal_holds: LegalHoldsTable;
  radius_sessions: RadiusSessionsTable;
  radius_outbox: RadiusOutboxTable;
  scim_users: ScimUsersTable;
  scim_groups: ScimGroupsTable;
  scim_group_members: ScimGroupMembersTable;
  imported_records: ImportedRecordsTable;
  destroyed_users: DestroyedUsersTable;
  mdm_inventory_misses: MdmInventoryMissesTable;
  revocation_list_sources: RevocationListSourcesTable;
}
