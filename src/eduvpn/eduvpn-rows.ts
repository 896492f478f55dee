// Every row of an eduVPN database is checked here, at the edge, before the import sees it:
// each value as eduVPN writes and validates it (ATOM timestamps, 44-character Base64 keys and
// common names, bare addresses, profile ids, 0/1 or true/false, BIGINTs that PostgreSQL and
// MariaDB/MySQL hand over as strings). A row that does not parse is an error naming its table,
// key and field: a record silently skipped would be a configuration that stops working after
// the move.
import { z } from 'zod';
import { ipAddressFamily } from '../net/ip-prefix.js';
import {
  asNodeNumber,
  asProfileId,
  asUserId,
  asWireGuardKey,
  type NodeNumber,
  type ProfileId,
  type UserId,
  type WireGuardKey,
} from '../shared/ids.js';
import { formatAtom, isAtomTime, isCalendarDay } from '../shared/time.js';
import { isWireGuardKey } from '../wireguard/keys.js';
import type {
  EduVpnAuthorization,
  EduVpnCertificate,
  EduVpnConnectionLogEntry,
  EduVpnDailyStatistics,
  EduVpnUser,
  EduVpnWireGuardPeer,
} from './deployment.js';
import { EduVpnReadError } from './read-error.js';

/** eduVPN's profile id rule (`^[a-zA-Z0-9-.]+$`). */
export const EDUVPN_PROFILE_ID_PATTERN = /^[a-zA-Z0-9.-]+$/;
/** An OAuth authorization's id as the OAuth server writes it. */
const AUTH_KEY_PATTERN = /^[A-Za-z0-9_-]+$/;
/** ATOM as eduVPN writes it (`+00:00`), also with `Z`, another offset or fractions of a second. */
const TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

const timestamp = z
  .string()
  .regex(TIMESTAMP_PATTERN, 'not an ATOM timestamp (YYYY-MM-DDTHH:MM:SS+00:00)')
  .transform((text, context) => {
    const date = new Date(text);
    // Date reads 30 February as 2 March and hour 24 as the next midnight, and a year past 9999
    // in UTC would sort before every time: such a time was never written by eduVPN, and reading
    // it as another time would move an expiry.
    if (!isAtomTime(text)) {
      context.addIssue({ code: 'custom', message: 'not a valid date and time' });
      return z.NEVER;
    }
    return formatAtom(date);
  });

const day = z.string().regex(DATE_PATTERN, 'not a date (YYYY-MM-DD)').refine(isCalendarDay, 'not a valid date');

/** A BIGINT: a number from SQLite, a decimal string from PostgreSQL and MariaDB/MySQL. */
const count = z
  .union([z.number(), z.bigint(), z.string().regex(/^-?\d+$/, 'not an integer')])
  .transform((value, context) => {
    const number = Number(value);
    if (!Number.isSafeInteger(number) || number < 0) {
      context.addIssue({ code: 'custom', message: 'not a non-negative integer' });
      return z.NEVER;
    }
    return number;
  });

const nodeNumber = count.transform((value): NodeNumber => asNodeNumber(value));

/**
 * BOOLEAN: SQLite's 0/1, MariaDB/MySQL's TINYINT(1) 0/1, PostgreSQL's true/false (and the text
 * forms a hand edit may leave).
 */
const flag = z.union([
  z.literal(0).transform(() => false),
  z.literal(1).transform(() => true),
  z.boolean(),
  z.enum(['0', '1', 'true', 'false', 't', 'f']).transform((text) => text === '1' || text === 'true' || text === 't'),
]);

const userId = z
  .string()
  .min(1, 'empty')
  .transform((text): UserId => asUserId(text));
const profileId = z
  .string()
  .regex(EDUVPN_PROFILE_ID_PATTERN, 'not a profile id (letters, digits, "-" and ".")')
  .transform((text): ProfileId => asProfileId(text));
/** A WireGuard public key or an OpenVPN common name: padded Base64 of 32 bytes, 44 characters. */
const connectionId = z.string().refine(isWireGuardKey, 'not Base64 of 32 bytes (44 characters)');
const publicKey = connectionId.transform((text): WireGuardKey => asWireGuardKey(text));
const authKey = z.string().regex(AUTH_KEY_PATTERN, 'not an authorization key (letters, digits, "-" and "_")');
const ipFour = z.string().refine((text) => ipAddressFamily(text) === 4, 'not a bare IPv4 address');
const ipSix = z.string().refine((text) => ipAddressFamily(text) === 6, 'not a bare IPv6 address');
const permissionList = z.string().refine((text) => permissionsOf(text) !== undefined, 'not a JSON array of strings');

/** The permissions of a `permission_list` (a JSON array of strings, opaque), or undefined when it is not one. */
export function permissionsOf(text: string): readonly string[] | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return Array.isArray(value) && value.every((entry) => typeof entry === 'string') ? value : undefined;
  } catch {
    return undefined;
  }
}

const userRow = z
  .object({
    user_id: userId,
    last_seen: timestamp,
    permission_list: permissionList,
    auth_data: z.string().nullable(),
    is_disabled: flag,
  })
  .transform(
    (row): EduVpnUser => ({
      userId: row.user_id,
      lastSeen: row.last_seen,
      permissionList: row.permission_list,
      authData: row.auth_data,
      isDisabled: row.is_disabled,
    }),
  );

// Authorizations and configurations are parsed with user_id as written: which user they belong
// to, the reader asks eduVPN's database (EduVpnUserOwned).
const authorizationRow = z
  .object({
    auth_key: authKey,
    user_id: userId,
    client_id: z.string().min(1, 'empty'),
    scope: z.string(),
    authorized_at: timestamp,
    expires_at: timestamp,
  })
  .transform(
    (row): Omit<EduVpnAuthorization, 'userFound'> => ({
      authKey: row.auth_key,
      userId: row.user_id,
      clientId: row.client_id,
      scope: row.scope,
      authorizedAt: row.authorized_at,
      expiresAt: row.expires_at,
    }),
  );

const wireGuardPeerRow = z
  .object({
    public_key: publicKey,
    user_id: userId,
    profile_id: profileId,
    node_number: nodeNumber,
    display_name: z.string(),
    ip_four: ipFour,
    ip_six: ipSix,
    created_at: timestamp,
    expires_at: timestamp,
    auth_key: authKey.nullable(),
  })
  .transform(
    (row): Omit<EduVpnWireGuardPeer, 'userFound'> => ({
      publicKey: row.public_key,
      userId: row.user_id,
      profileId: row.profile_id,
      nodeNumber: row.node_number,
      displayName: row.display_name,
      ipFour: row.ip_four,
      ipSix: row.ip_six,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      authKey: row.auth_key,
    }),
  );

const certificateRow = z
  .object({
    common_name: connectionId,
    user_id: userId,
    profile_id: profileId,
    node_number: nodeNumber,
    display_name: z.string(),
    created_at: timestamp,
    expires_at: timestamp,
    auth_key: authKey.nullable(),
  })
  .transform(
    (row): Omit<EduVpnCertificate, 'userFound'> => ({
      commonName: row.common_name,
      userId: row.user_id,
      profileId: row.profile_id,
      nodeNumber: row.node_number,
      displayName: row.display_name,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      authKey: row.auth_key,
    }),
  );

const connectionLogRow = z
  .object({
    user_id: userId,
    profile_id: profileId,
    vpn_proto: z.enum(['wireguard', 'openvpn']),
    connection_id: connectionId,
    ip_four: ipFour,
    ip_six: ipSix,
    connected_at: timestamp,
    disconnected_at: timestamp.nullable(),
    bytes_in: count.nullable(),
    bytes_out: count.nullable(),
  })
  .transform(
    (row): EduVpnConnectionLogEntry => ({
      userId: row.user_id,
      writtenUserId: row.user_id,
      profileId: row.profile_id,
      vpnProto: row.vpn_proto,
      connectionId: row.connection_id,
      ipFour: row.ip_four,
      ipSix: row.ip_six,
      connectedAt: row.connected_at,
      disconnectedAt: row.disconnected_at,
      bytesIn: row.bytes_in,
      bytesOut: row.bytes_out,
    }),
  );

const dailyStatisticsRow = z
  .object({
    date: day,
    profile_id: profileId,
    max_connection_count: count,
    unique_user_count: count,
  })
  .transform(
    (row): EduVpnDailyStatistics => ({
      date: row.date,
      profileId: row.profile_id,
      maxConnectionCount: row.max_connection_count,
      uniqueUserCount: row.unique_user_count,
    }),
  );

/** The parser of each table's rows, and the columns that name a row in an error. */
export const EDUVPN_ROW_PARSERS = {
  users: userRow,
  oauth_authorizations: authorizationRow,
  wg_peers: wireGuardPeerRow,
  certificates: certificateRow,
  connection_log: connectionLogRow,
  aggregate_stats: dailyStatisticsRow,
} as const;
export type EduVpnRecordTable = keyof typeof EDUVPN_ROW_PARSERS;
export type EduVpnRecordOf<Table extends EduVpnRecordTable> = z.output<(typeof EDUVPN_ROW_PARSERS)[Table]>;

/**
 * The record of one row, or an error naming the table, the row (`rowName`: its key, or its
 * position in a table without one) and the first field that is wrong. The value itself is
 * not repeated: it may be long, or something a log should not keep.
 */
export function parseEduVpnRow<Table extends EduVpnRecordTable>(
  table: Table,
  rowName: string,
  row: unknown,
): EduVpnRecordOf<Table> {
  const parsed = EDUVPN_ROW_PARSERS[table].safeParse(row);
  if (parsed.success) return parsed.data as EduVpnRecordOf<Table>;
  const [issue] = parsed.error.issues;
  const field = issue === undefined ? '' : issue.path.map(String).join('.');
  throw new EduVpnReadError(
    `table ${table}, row ${rowName}: ${field === '' ? '' : `field ${field}: `}${issue?.message ?? 'does not parse'}`,
  );
}
