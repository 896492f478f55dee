// eduVPN 3.x's own tables (schema 2023011801, and 2022022201 which lacks
// aggregate_stats.unique_guest_user_count), typed for Kysely as the drivers hand them over:
// SQLite gives booleans as 0/1 and BIGINT as numbers, PostgreSQL gives real booleans and BIGINT
// as strings, MariaDB/MySQL gives BOOLEAN (TINYINT(1)) as 0/1 and BIGINT as strings. Every row
// is checked by src/eduvpn/eduvpn-rows.ts before it is used; this portal's own schema
// (src/storage/schema.ts) has nothing to do with these.

/** A BIGINT column as any of the drivers returns it. */
type BigIntColumn = number | string | bigint;
/** A BOOLEAN column as any of the drivers returns it. */
type BooleanColumn = number | boolean | string;

export interface EduVpnVersionTable {
  current_version: string;
}

export interface EduVpnUsersTable {
  user_id: string;
  last_seen: string;
  permission_list: string;
  auth_data: string | null;
  is_disabled: BooleanColumn;
}

export interface EduVpnLocalUsersTable {
  user_id: string;
  password_hash: string;
  created_at: string;
}

export interface EduVpnOAuthAuthorizationsTable {
  auth_key: string;
  client_id: string;
  scope: string;
  authorized_at: string;
  expires_at: string;
  user_id: string;
}

export interface EduVpnOAuthRefreshTokenLogTable {
  auth_key: string;
  refresh_token_id: string;
}

export interface EduVpnCertificatesTable {
  node_number: BigIntColumn;
  profile_id: string;
  display_name: string;
  common_name: string;
  created_at: string;
  expires_at: string;
  auth_key: string | null;
  user_id: string;
}

export interface EduVpnWgPeersTable {
  node_number: BigIntColumn;
  profile_id: string;
  display_name: string;
  public_key: string;
  ip_four: string;
  ip_six: string;
  created_at: string;
  expires_at: string;
  auth_key: string | null;
  user_id: string;
}

export interface EduVpnConnectionLogTable {
  user_id: string;
  profile_id: string;
  vpn_proto: string;
  connection_id: string;
  ip_four: string;
  ip_six: string;
  connected_at: string;
  bytes_in: BigIntColumn | null;
  bytes_out: BigIntColumn | null;
  disconnected_at: string | null;
}

export interface EduVpnLiveStatsTable {
  date_time: string;
  profile_id: string;
  connection_count: BigIntColumn;
}

export interface EduVpnAggregateStatsTable {
  date: string;
  profile_id: string;
  max_connection_count: BigIntColumn;
  unique_user_count: BigIntColumn;
  /** Not in schema 2022022201. */
  unique_guest_user_count: BigIntColumn;
}

export interface EduVpnDatabase {
  version: EduVpnVersionTable;
  users: EduVpnUsersTable;
  local_users: EduVpnLocalUsersTable;
  oauth_authorizations: EduVpnOAuthAuthorizationsTable;
  oauth_refresh_token_log: EduVpnOAuthRefreshTokenLogTable;
  certificates: EduVpnCertificatesTable;
  wg_peers: EduVpnWgPeersTable;
  connection_log: EduVpnConnectionLogTable;
  live_stats: EduVpnLiveStatsTable;
  aggregate_stats: EduVpnAggregateStatsTable;
}
