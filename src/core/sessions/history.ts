// GET /connection_log (an extension): who was connected when, from where, with how much
// traffic, for OpenVPN and WireGuard alike, newest first, a page at a time. The cursor names
// the last row of a page (its start and id), so pages stay stable while new sessions arrive.
import { canonicalAddress, unmappedIpv4 } from '../../net/cidr.js';
import { ipAddressFamily } from '../../net/ip-prefix.js';
import type { ConnectionLogEntry } from '../../protocol/admin-api.js';
import { formatAtom } from '../../shared/time.js';
import { connectionLogPage, type ConnectionLogFilter } from '../../storage/connection-log.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { assertProfileAllowed, reachableProfiles } from '../access/index.js';

export interface HistoryQuery extends Omit<ConnectionLogFilter, 'after' | 'profiles' | 'ip'> {
  /** An IPv4 or IPv6 address in any text form (`fd00:0::1` finds `fd00::1`): tunnel or originating. */
  readonly ip?: string;
  /** Only the tunnel address is compared with `ip` (a NAT mapping names one), not the client's own. */
  readonly tunnelOnly?: boolean;
  readonly cursor?: string;
  /** Why a person is looked up by `ip` (the audit row of the call keeps it). */
  readonly reason?: string;
}

export interface HistoryPage {
  readonly entries: ConnectionLogEntry[];
  readonly nextCursor: string | null;
}

/** A key limited to some profiles sees the history of those profiles only. */
export async function connectionHistoryPage(ctx: PortalContext, query: HistoryQuery): Promise<HistoryPage> {
  if (query.ip !== undefined && ctx.config.lookups.requireReason.connectionLog) requireReason(query.reason);
  if (query.at !== undefined) requirePastMoment(ctx, query.at);
  return searchConnectionHistory(ctx, query);
}

/** The history page of `connectionHistoryPage` for a use case that checked the reason its own way (attribution). */
export async function searchConnectionHistory(ctx: PortalContext, query: HistoryQuery): Promise<HistoryPage> {
  if (query.profileId !== undefined) assertProfileAllowed(ctx, query.profileId);
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const profiles = reachableProfiles(ctx);
  const { ip: address, tunnelOnly, reason: _reason, cursor: _cursor, ...filter } = query;
  const ip =
    address === undefined ? undefined : { ...searchedAddress(address), ...(tunnelOnly === true ? { tunnelOnly } : {}) };
  // One more row than asked tells whether there is a next page.
  const rows = await connectionLogPage(ctx.db, {
    ...filter,
    ...(ip === undefined ? {} : { ip }),
    ...(after === undefined ? {} : { after }),
    ...(profiles === null ? {} : { profiles }),
    limit: query.limit + 1,
  });
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    entries: page.map((row) => ({
      user_id: row.userId,
      profile_id: row.profileId,
      vpn_proto: row.vpnProto === 'openvpn' ? 'openvpn' : 'wireguard',
      connection_id: row.connectionId,
      node_number: row.nodeNumber,
      ip_four: row.ipFour,
      ip_six: row.ipSix,
      originating_ip: row.originatingIp,
      connected_at: row.connectedAt,
      disconnected_at: row.disconnectedAt,
      bytes_in: row.bytesIn,
      bytes_out: row.bytesOut,
    })),
    nextCursor: rows.length > query.limit && last !== undefined ? encodeCursor(last.connectedAt, last.logId) : null,
  };
}

/** A look-up of people by address that must say why (`lookups.requireReason`): 400 without a reason. */
export function requireReason(reason: string | undefined): void {
  if (reason === undefined)
    throw new PortalError(
      'invalid-parameter',
      'missing query parameter "reason": say why you look this person up (1–200 characters, kept in the audit log)',
    );
}

/** How far a moment asked about may lie ahead of the portal's clock: the reporting server's may run ahead. */
const MOMENT_AHEAD_ALLOWED_MS = 60_000;

/**
 * A moment asked about (`at`) must have come: for a later one, the sessions open now would answer
 * as if they held the address then, though they may end before it (a mistyped year names
 * whoever is connected today). 400; a minute ahead is allowed for the reporting server's clock.
 */
export function requirePastMoment(ctx: PortalContext, at: string): void {
  const now = ctx.clock.now();
  if (Date.parse(at) > now.getTime() + MOMENT_AHEAD_ALLOWED_MS)
    throw new PortalError(
      'invalid-parameter',
      `invalid value for "at": ${at} has not come yet (the portal's clock says ${formatAtom(now)}); ask about a moment that has passed`,
    );
}

/** The address as the log stores it (canonical text, an IPv4-mapped one as IPv4), and its family. */
function searchedAddress(given: string): { address: string; family: 4 | 6 } {
  const text = unmappedIpv4(given);
  const family = ipAddressFamily(text);
  if (family === null)
    throw new PortalError(
      'invalid-parameter',
      `invalid value for "ip": ${JSON.stringify(given.slice(0, 64))} is not an IPv4 or IPv6 address`,
    );
  return { address: canonicalAddress(text), family };
}

function encodeCursor(connectedAt: string, logId: string): string {
  return Buffer.from(JSON.stringify([connectedAt, logId])).toString('base64url');
}

function decodeCursor(cursor: string): { connectedAt: string; logId: string } {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    // Ours hold a time and an id: short, and never a NUL (which PostgreSQL refuses in text).
    const isPart = (part: unknown): part is string =>
      typeof part === 'string' && part.length <= 255 && !part.includes('\u0000');
    if (Array.isArray(value) && value.length === 2 && isPart(value[0]) && isPart(value[1])) {
      return { connectedAt: value[0], logId: value[1] };
    }
  } catch {
    // Not one of ours: refused below.
  }
  throw new PortalError('invalid-parameter', 'invalid value for "cursor"');
}
