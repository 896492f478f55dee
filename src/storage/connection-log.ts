// Queries on `connection_log`: the history of connections, as the nodes report them.
import { sql } from 'kysely';
import { canonicalAddressOrSame, clientAddressOrSame } from '../net/cidr.js';
import type { NodeNumber, ProfileId, UserId, VpnProto } from '../shared/ids.js';
import { formatAtom } from '../shared/time.js';
import { timeOrderedId } from '../shared/time-ordered-id.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import { countInBatches, inBatches, neverStopping, type Stopping } from './batches.js';
import { isPostgres, type Db } from './database.js';
import type { RetentionCount } from './legal-holds.js';

export interface OpenedConnection {
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly vpnProto: VpnProto;
  readonly connectionId: string;
  readonly nodeNumber: NodeNumber;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly originatingIp: string | null;
  readonly connectedAt: Date;
}

/** A history row as stored, from a session opened here or one brought by the eduVPN import. */
function historyRow(row: ConnectionLogRow) {
  return {
    log_id: row.logId,
    user_id: row.userId,
    profile_id: row.profileId,
    vpn_proto: row.vpnProto,
    connection_id: row.connectionId,
    node_number: row.nodeNumber,
    // Canonical text, so a search by address finds it however the node wrote it (0015); the
    // client's own address also unmapped from IPv4-mapped, as a search unmaps the one it asks for.
    ip_four: canonicalAddressOrSame(row.ipFour),
    ip_six: canonicalAddressOrSame(row.ipSix),
    originating_ip: row.originatingIp === null ? null : clientAddressOrSame(row.originatingIp),
    connected_at: row.connectedAt,
    disconnected_at: row.disconnectedAt,
    bytes_in: row.bytesIn,
    bytes_out: row.bytesOut,
  };
}

export async function openConnection(db: Db, connection: OpenedConnection): Promise<void> {
  let insert = db.insertInto('connection_log').values(
    historyRow({
      ...connection,
      logId: timeOrderedId(),
      connectedAt: formatAtom(connection.connectedAt),
      disconnectedAt: null,
      bytesIn: null,
      bytesOut: null,
    }),
  );
  // A WireGuard session has at most one open row per node (a partial unique index): a second
  // instance that saw the same handshake adds nothing.
  if (connection.vpnProto === 'wireguard') {
    insert = insert.onConflict((conflict) =>
      // The index's own predicate, literally: SQLite matches a partial index only by its text.
      conflict
        .columns(['connection_id', 'node_number'])
        .where(sql<boolean>`disconnected_at IS NULL AND vpn_proto = 'wireguard'`)
        .doNothing(),
    );
  }
  await insert.execute();
}

/**
 * Closes the open entries of a connection on a node (normally one). The configuration may be
 * gone already: the log is looked up by connection id only, as the reference does. With the
 * session's client address, only that session closes: an OpenVPN client that reconnected
 * before its old session's end was reported has two open rows, and the new one stays open.
 * With its start too, only that one row: the node may have given the address the old session
 * freed to the client's new connection, whose row stays open.
 */
export async function closeConnection(
  db: Db,
  closed: {
    connectionId: string;
    nodeNumber: NodeNumber;
    disconnectedAt: Date;
    /** Null: not known yet (see recordLateCounters). */
    bytesIn: number | null;
    bytesOut: number | null;
    /** Blank the client's own address: it is not to be kept past the session. */
    forgetOriginatingIp?: boolean;
    /** The session's IPv4 client address, when known: only the rows of that session close. */
    ipFour?: string;
    /** The session's start (ATOM), when known: only its row closes (the first, should two share it). */
    connectedAt?: string;
  },
): Promise<number> {
  const ipFour = closed.ipFour === undefined ? undefined : canonicalAddressOrSame(closed.ipFour);
  const { connectedAt } = closed;
  let update = db
    .updateTable('connection_log')
    .set({
      disconnected_at: formatAtom(closed.disconnectedAt),
      bytes_in: closed.bytesIn,
      bytes_out: closed.bytesOut,
      ...(closed.forgetOriginatingIp === true ? { originating_ip: null } : {}),
    })
    .where('connection_id', '=', closed.connectionId)
    .where('node_number', '=', closed.nodeNumber)
    .where('disconnected_at', 'is', null);
  if (ipFour !== undefined) update = update.where('ip_four', '=', ipFour);
  if (connectedAt !== undefined) {
    let row = db
      .selectFrom('connection_log')
      .select('log_id')
      .where('connection_id', '=', closed.connectionId)
      .where('node_number', '=', closed.nodeNumber)
      .where('disconnected_at', 'is', null)
      .where('connected_at', '=', connectedAt);
    if (ipFour !== undefined) row = row.where('ip_four', '=', ipFour);
    update = update.where('log_id', '=', row.orderBy('log_id').limit(1));
  }
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** An open row of the history, as the session events name it: connection, node, protocol, IPv4 address and start. */
export interface OpenSessionRow {
  readonly connectionId: string;
  readonly nodeNumber: NodeNumber;
  readonly vpnProto: VpnProto;
  readonly ipFour: string;
  /** ATOM. */
  readonly connectedAt: string;
}

/**
 * The open rows of these connections, read in the transaction that is to announce their
 * sessions' ends and starts. On PostgreSQL they stay locked until that transaction ends, taken
 * in one order (`log_id`), so a row another change is closing or opening meanwhile is waited for
 * and then read as it committed; SQLite runs one writing transaction at a time.
 */
export async function lockOpenSessionRows(trx: Db, connectionIds: readonly string[]): Promise<OpenSessionRow[]> {
  if (connectionIds.length === 0) return [];
  const query = trx
    .selectFrom('connection_log')
    .select(['connection_id', 'node_number', 'vpn_proto', 'ip_four', 'connected_at'])
    .where('connection_id', 'in', [...new Set(connectionIds)])
    .where('disconnected_at', 'is', null)
    .orderBy('log_id');
  const rows = await (isPostgres(trx) ? query.forUpdate() : query).execute();
  return rows.map((row) => ({
    connectionId: row.connection_id,
    nodeNumber: Number(row.node_number) as NodeNumber,
    vpnProto: row.vpn_proto === 'openvpn' ? 'openvpn' : 'wireguard',
    ipFour: row.ip_four,
    connectedAt: row.connected_at,
  }));
}

export interface ConnectionLogEntry {
  readonly userId: string;
  readonly profileId: string;
  readonly connectionId: string;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly connectedAt: string;
  readonly disconnectedAt: string | null;
  readonly bytesIn: number | null;
  readonly bytesOut: number | null;
}

/** The history of one connection id, oldest first. */
export async function connectionHistory(db: Db, connectionId: string): Promise<ConnectionLogEntry[]> {
  const rows = await db
    .selectFrom('connection_log')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .orderBy('connected_at')
    .execute();
  return rows.map((row) => ({
    userId: row.user_id,
    profileId: row.profile_id,
    connectionId: row.connection_id,
    ipFour: row.ip_four,
    ipSix: row.ip_six,
    connectedAt: row.connected_at,
    disconnectedAt: row.disconnected_at,
    bytesIn: row.bytes_in === null ? null : Number(row.bytes_in),
    bytesOut: row.bytes_out === null ? null : Number(row.bytes_out),
  }));
}

/** An open session, as its connection_log row says. */
export interface OpenSession {
  readonly connectionId: string;
  readonly nodeNumber: NodeNumber;
  readonly userId: string;
  readonly profileId: string;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly originatingIp: string | null;
  /** ATOM. */
  readonly connectedAt: string;
}

const OPEN_SESSION_COLUMNS = [
  'connection_id',
  'node_number',
  'user_id',
  'profile_id',
  'ip_four',
  'ip_six',
  'originating_ip',
  'connected_at',
] as const;

function toOpenSession(row: {
  connection_id: string;
  node_number: number;
  user_id: string;
  profile_id: string;
  ip_four: string;
  ip_six: string;
  originating_ip: string | null;
  connected_at: string;
}): OpenSession {
  return {
    connectionId: row.connection_id,
    nodeNumber: row.node_number as NodeNumber,
    userId: row.user_id,
    profileId: row.profile_id,
    ipFour: row.ip_four,
    ipSix: row.ip_six,
    originatingIp: row.originating_ip,
    connectedAt: row.connected_at,
  };
}

/** The open WireGuard sessions of a node, by public key. */
export async function openWireGuardSessions(db: Db, nodeNumber: NodeNumber): Promise<Map<string, OpenSession>> {
  const rows = await openWireGuardSessionsQuery(db, nodeNumber).execute();
  return new Map(rows.map((row) => [row.connection_id, toOpenSession(row)]));
}

/**
 * The open WireGuard sessions of a node, by their own index (connection_log_open_wireguard_node):
 * its conditions are written into the statement as they are in the index, where the planner sees
 * that they match.
 */
export function openWireGuardSessionsQuery(db: Db, nodeNumber: NodeNumber) {
  return db
    .selectFrom('connection_log')
    .select(OPEN_SESSION_COLUMNS)
    .where('vpn_proto', '=', sql.lit('wireguard'))
    .where('disconnected_at', 'is', null)
    .where('node_number', '=', nodeNumber);
}

/** Which of these WireGuard keys have an open session on their node. */
export async function openWireGuardSessionsOf(db: Db, keys: readonly string[]): Promise<OpenSession[]> {
  if (keys.length === 0) return [];
  const rows = await db
    .selectFrom('connection_log')
    .select(OPEN_SESSION_COLUMNS)
    .where('vpn_proto', '=', 'wireguard')
    .where('connection_id', 'in', keys)
    .where('disconnected_at', 'is', null)
    .execute();
  return rows.map(toOpenSession);
}

/** When the last ended session of each of these connection ids ended (ATOM), by id; ids without one are left out. */
export async function lastSessionEnds(db: Db, connectionIds: readonly string[]): Promise<Map<string, string>> {
  if (connectionIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('connection_log')
    .select((eb) => ['connection_id', eb.fn.max('disconnected_at').as('ended')])
    .where('connection_id', 'in', connectionIds)
    .where('disconnected_at', 'is not', null)
    .groupBy('connection_id')
    .execute();
  return new Map(rows.flatMap((row) => (row.ended === null ? [] : [[row.connection_id, row.ended] as const])));
}

/** The session a node's disconnect report names (see reportedSessionOf). */
export interface ReportedSession extends OpenSession {
  readonly logId: string;
  /**
   * Ended already, before its end was heard, by the connect of the next session on its address
   * (`replaced`): only its counters are still to come.
   */
  readonly replaced: boolean;
}

/**
 * The session of one connection on a node (OpenVPN: its Common Name) whose end a disconnect
 * report tells. Without a client address, the latest open one. With one, the oldest of that
 * address that is open or was ended by the connect of the next session on it before its own end
 * was heard (closed at that session's start, its counters still null): the node gave the address
 * to a newer one only once the older had ended, so the end reported is the older's, and a
 * report that comes after the newer connect is still the older's, not the newer's. With
 * `startedBy` (ATOM), only a session that began by then: a session that began later is not the
 * connection whose end is reported (a report repeated after the first one ended that connection
 * and the client connected again).
 */
export async function reportedSessionOf(
  db: Db,
  connectionId: string,
  nodeNumber: NodeNumber,
  ipFour?: string,
  startedBy?: string,
): Promise<ReportedSession | undefined> {
  let query = db
    .selectFrom('connection_log as row')
    .select([...OPEN_SESSION_COLUMNS.map((column) => `row.${column}` as const), 'row.log_id', 'row.disconnected_at'])
    .where('row.connection_id', '=', connectionId)
    .where('row.node_number', '=', nodeNumber);
  if (startedBy !== undefined) query = query.where('row.connected_at', '<=', startedBy);
  const row =
    ipFour === undefined
      ? await query
          .where('row.disconnected_at', 'is', null)
          .orderBy('row.connected_at', 'desc')
          .orderBy('row.log_id', 'desc')
          .executeTakeFirst()
      : await query
          .where('row.ip_four', '=', canonicalAddressOrSame(ipFour))
          .where((eb) =>
            eb.or([
              eb('row.disconnected_at', 'is', null),
              eb.and([
                eb('row.bytes_in', 'is', null),
                eb.exists(
                  eb
                    .selectFrom('connection_log as next')
                    .select('next.log_id')
                    .whereRef('next.node_number', '=', 'row.node_number')
                    .whereRef('next.ip_four', '=', 'row.ip_four')
                    .whereRef('next.connected_at', '=', 'row.disconnected_at')
                    .whereRef('next.log_id', '!=', 'row.log_id'),
                ),
              ]),
            ]),
          )
          .orderBy('row.connected_at')
          .orderBy('row.log_id')
          .executeTakeFirst();
  return row === undefined
    ? undefined
    : { ...toOpenSession(row), logId: row.log_id, replaced: row.disconnected_at !== null };
}

/**
 * One history row as it stands, read in the transaction that is to end its session or record
 * its counters: open, or closed and whether with counters. On PostgreSQL it stays locked until
 * that transaction ends, so a change closing it meanwhile (the connect of the next session on its
 * address, a retried report) is waited for and then read as it committed.
 */
export async function lockSessionRow(
  trx: Db,
  logId: string,
): Promise<{ readonly open: boolean; readonly counted: boolean } | undefined> {
  const query = trx.selectFrom('connection_log').select(['disconnected_at', 'bytes_in']).where('log_id', '=', logId);
  const row = await (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst();
  return row === undefined ? undefined : { open: row.disconnected_at === null, counted: row.bytes_in !== null };
}

/**
 * Writes the counters a late disconnect report brings into the row of the session it tells of,
 * ended already by the next connection on its address (see reportedSessionOf): only while the
 * row is closed without counters, so they are written once, however often the report comes.
 * Answers whether they were.
 */
export async function recordLateCounters(db: Db, logId: string, bytesIn: number, bytesOut: number): Promise<boolean> {
  const result = await db
    .updateTable('connection_log')
    .set({ bytes_in: bytesIn, bytes_out: bytesOut })
    .where('log_id', '=', logId)
    .where('disconnected_at', 'is not', null)
    .where('bytes_in', 'is', null)
    .where('bytes_out', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * When the first session of the node with this IPv4 client address began after `after` (ATOM),
 * if one did: the node gives an address to one client at a time, so a session on it had ended by
 * then, whenever its end is heard.
 */
export async function nextSessionOnAddress(
  db: Db,
  nodeNumber: NodeNumber,
  ipFour: string,
  after: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('connection_log')
    .select('connected_at')
    .where('ip_four', '=', canonicalAddressOrSame(ipFour))
    .where('connected_at', '>', after)
    .where('node_number', '=', nodeNumber)
    .orderBy('connected_at')
    .limit(1)
    .executeTakeFirst();
  return row?.connected_at;
}

/**
 * The open OpenVPN sessions that hold `ipFour` on the node and began by `startedBy` (ATOM), of
 * any configuration, the connecting one's too, read in the transaction that records the
 * address's next session: the node freed the address before it gave it away, so they are over,
 * whether or not their end was heard. On PostgreSQL the rows stay locked until that transaction
 * ends, so a change closing one meanwhile (its disconnect report) is waited for, and a row it
 * closed is not read.
 */
export async function lockEarlierHoldersOfAddress(
  trx: Db,
  nodeNumber: NodeNumber,
  ipFour: string,
  startedBy: string,
): Promise<OpenSession[]> {
  const query = openOpenVpnSessionsQuery(trx, nodeNumber)
    .where('ip_four', '=', canonicalAddressOrSame(ipFour))
    .where('connected_at', '<=', startedBy)
    .orderBy('log_id');
  return (await (isPostgres(trx) ? query.forUpdate() : query).execute()).map(toOpenSession);
}

/** The open OpenVPN sessions of a node that started before `before` (ATOM), oldest first. */
export async function openOpenVpnSessionsBefore(
  db: Db,
  nodeNumber: NodeNumber,
  before: string,
): Promise<OpenSession[]> {
  return (await openOpenVpnSessionsQuery(db, nodeNumber, before).execute()).map(toOpenSession);
}

/** Whether the node has an open OpenVPN session. */
export async function hasOpenOpenVpnSession(db: Db, nodeNumber: NodeNumber): Promise<boolean> {
  return (await openOpenVpnSessionsQuery(db, nodeNumber).limit(1).executeTakeFirst()) !== undefined;
}

/**
 * The open OpenVPN sessions of a node (that started before `before`), oldest first, by their own
 * index (connection_log_open_openvpn), as openWireGuardSessionsQuery reads the WireGuard ones.
 */
export function openOpenVpnSessionsQuery(db: Db, nodeNumber: NodeNumber, before?: string) {
  let query = db
    .selectFrom('connection_log')
    .select(OPEN_SESSION_COLUMNS)
    .where('vpn_proto', '=', sql.lit('openvpn'))
    .where('disconnected_at', 'is', null)
    .where('node_number', '=', nodeNumber);
  if (before !== undefined) query = query.where('connected_at', '<', before);
  return query.orderBy('connected_at');
}

/**
 * At most `limit` open sessions on nodes other than `nodeNumbers`: nodes taken out of the
 * configuration, which no pass reads any more. With their protocol.
 */
export async function openSessionsOffNodes(
  db: Db,
  nodeNumbers: readonly NodeNumber[],
  limit: number,
): Promise<(OpenSession & { readonly vpnProto: VpnProto })[]> {
  let query = db
    .selectFrom('connection_log')
    .select([...OPEN_SESSION_COLUMNS, 'vpn_proto'])
    .where('disconnected_at', 'is', null);
  if (nodeNumbers.length > 0) query = query.where('node_number', 'not in', nodeNumbers);
  const rows = await query.orderBy('connected_at').orderBy('log_id').limit(limit).execute();
  return rows.map((row) => ({
    ...toOpenSession(row),
    vpnProto: row.vpn_proto === 'openvpn' ? 'openvpn' : 'wireguard',
  }));
}

/** Open sessions and the distinct users behind them, per profile (for live statistics). */
export async function openSessionCounts(db: Db): Promise<Map<string, { connections: number; users: number }>> {
  const rows = await db
    .selectFrom('connection_log')
    .select((eb) => [
      'profile_id',
      eb.fn.countAll<number | string>().as('connections'),
      eb.fn.count<number | string>('user_id').distinct().as('users'),
    ])
    .where('disconnected_at', 'is', null)
    .groupBy('profile_id')
    .execute();
  return new Map(
    rows.map((row) => [row.profile_id, { connections: Number(row.connections), users: Number(row.users) }]),
  );
}

/**
 * Deletes closed rows that ended before `before`, except the rows of `heldUsers` (legal holds),
 * in batches (src/storage/batches.ts); says how many it deleted and how many it kept for a hold.
 */
export async function pruneConnectionLog(
  db: Db,
  before: string,
  heldUsers: readonly string[] = [],
  stopping: Stopping = neverStopping,
): Promise<RetentionCount> {
  const held = heldUsers.length === 0 ? 0 : await countClosedBefore(db, before, heldUsers, false);
  const removed = await inBatches(async (limit) => {
    const result = await pruningQuery(db, before, heldUsers, limit).executeTakeFirst();
    return Number(result.numDeletedRows);
  }, stopping);
  return { removed, held };
}

/** One batch of pruneConnectionLog: at most `limit` rows, found by the index on the end, deleted by key. */
export function pruningQuery(db: Db, before: string, heldUsers: readonly string[], limit: number) {
  const batch = closedBefore(db, before, heldUsers).select('log_id').limit(limit);
  return db.deleteFrom('connection_log').where('log_id', 'in', batch);
}

/**
 * Blanks the client's own address of closed rows that ended before `before` (the rows stay
 * until `connectionLogRetention`), except the rows of `heldUsers`, in batches; says how many of each.
 */
export async function blankOriginatingAddresses(
  db: Db,
  before: string,
  heldUsers: readonly string[] = [],
  stopping: Stopping = neverStopping,
): Promise<RetentionCount> {
  const held = heldUsers.length === 0 ? 0 : await countClosedBefore(db, before, heldUsers, true);
  const removed = await inBatches(async (limit) => {
    const result = await blankingQuery(db, before, heldUsers, limit).executeTakeFirst();
    return Number(result.numUpdatedRows);
  }, stopping);
  return { removed, held };
}

/** One batch of blankOriginatingAddresses: it reads the partial index of 0031, rows that still have an address. */
export function blankingQuery(db: Db, before: string, heldUsers: readonly string[], limit: number) {
  const batch = closedBefore(db, before, heldUsers)
    .where('originating_ip', 'is not', null)
    .select('log_id')
    .limit(limit);
  return db.updateTable('connection_log').set({ originating_ip: null }).where('log_id', 'in', batch);
}

/** Closed rows that ended before `before`, except those of `heldUsers`. */
function closedBefore(db: Db, before: string, heldUsers: readonly string[]) {
  const query = db
    .selectFrom('connection_log')
    .where('disconnected_at', 'is not', null)
    .where('disconnected_at', '<', before);
  return heldUsers.length > 0 ? query.where('user_id', 'not in', heldUsers) : query;
}

/**
 * Closed rows of these users that ended before `before` (with an address only, when
 * `withAddress`): what a legal hold keeps, counted a page of each user's history at a time.
 */
async function countClosedBefore(
  db: Db,
  before: string,
  users: readonly string[],
  withAddress: boolean,
): Promise<number> {
  let total = 0;
  // Each user once: a user named twice would be counted twice, where `IN` counted once.
  for (const user of new Set(users)) {
    total += await countInBatches<HistoryKey>(async (after, limit) => {
      const rows = await heldCountingQuery(db, { before, user, withAddress, after, limit }).execute();
      return rows.map((row) => ({
        key: { connectedAt: row.connected_at, logId: row.log_id },
        counts: Number(row.counts) === 1,
      }));
    });
  }
  return total;
}

/** A session's place in a user's history: its start, then its id. */
export interface HistoryKey {
  readonly connectedAt: string;
  readonly logId: string;
}

/**
 * One page of countClosedBefore: the next `limit` sessions of one user after `after`, read from
 * the index on (user, start, id) at that point, each saying whether it is closed, ended before
 * `before` and (when `withAddress`) still has the client's address.
 */
export function heldCountingQuery(
  db: Db,
  page: {
    readonly before: string;
    readonly user: string;
    readonly withAddress: boolean;
    readonly after: HistoryKey | undefined;
    readonly limit: number;
  },
) {
  // NULL < before is not true: an open session does not count.
  const counted = page.withAddress
    ? sql<number>`CASE WHEN disconnected_at < ${page.before} AND originating_ip IS NOT NULL THEN 1 ELSE 0 END`
    : sql<number>`CASE WHEN disconnected_at < ${page.before} THEN 1 ELSE 0 END`;
  let query = db
    .selectFrom('connection_log')
    .select(['connected_at', 'log_id', counted.as('counts')])
    .where('user_id', '=', page.user)
    .orderBy('connected_at')
    .orderBy('log_id')
    .limit(page.limit);
  const after = page.after;
  if (after !== undefined) {
    query = query
      .where('connected_at', '>=', after.connectedAt)
      .where((eb) =>
        eb.or([
          eb('connected_at', '>', after.connectedAt),
          eb.and([eb('connected_at', '=', after.connectedAt), eb('log_id', '>', after.logId)]),
        ]),
      );
  }
  return query;
}

/** Whether any history names this user (a destroyed user's records outlive the account). */
export async function hasConnectionHistory(db: Db, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('connection_log')
    .select('log_id')
    .where('user_id', '=', userId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export interface ConnectionLogFilter {
  readonly userId?: string;
  readonly profileId?: string;
  /** Only these profiles (an admin key limited to some). */
  readonly profiles?: readonly string[];
  readonly connectionId?: string;
  /** Sessions still open at or after this time (ATOM). */
  readonly since?: string;
  /** Sessions that started before this time (ATOM). */
  readonly until?: string;
  /** true: only open sessions; false: only closed ones. */
  readonly open?: boolean;
  /**
   * Sessions with this address, canonical text: tunnel IPv4 or IPv6, or the client's originating
   * address (`tunnelOnly`: the tunnel address alone, as a NAT mapping names it).
   */
  readonly ip?: { readonly address: string; readonly family: 4 | 6; readonly tunnelOnly?: boolean };
  /** Sessions on this node only. */
  readonly nodeNumber?: NodeNumber;
  /** Sessions open at this moment (ATOM): started at or before it, not ended before it (the second it ended in counts). */
  readonly at?: string;
  /** Continue after this row (newest first): its start and id. */
  readonly after?: { readonly connectedAt: string; readonly logId: string };
  readonly limit: number;
}

export interface ConnectionLogRow {
  readonly logId: string;
  readonly userId: string;
  readonly profileId: string;
  readonly vpnProto: string;
  readonly connectionId: string;
  readonly nodeNumber: number;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly originatingIp: string | null;
  readonly connectedAt: string;
  readonly disconnectedAt: string | null;
  readonly bytesIn: number | null;
  readonly bytesOut: number | null;
}

/** One page of the history, newest first (by start, then id). */
export async function connectionLogPage(db: Db, filter: ConnectionLogFilter): Promise<ConnectionLogRow[]> {
  if (filter.profiles !== undefined && filter.profiles.length === 0) return [];
  const rows = await connectionLogQuery(db, filter).execute();
  return rows.map((row) => ({
    logId: row.log_id,
    userId: row.user_id,
    profileId: row.profile_id,
    vpnProto: row.vpn_proto,
    connectionId: row.connection_id,
    nodeNumber: row.node_number,
    ipFour: row.ip_four,
    ipSix: row.ip_six,
    originatingIp: row.originating_ip,
    connectedAt: row.connected_at,
    disconnectedAt: row.disconnected_at,
    bytesIn: row.bytes_in === null ? null : Number(row.bytes_in),
    bytesOut: row.bytes_out === null ? null : Number(row.bytes_out),
  }));
}

/** The statement of a page of the history (with `profiles`, a non-empty list): what connectionLogPage runs. */
export function connectionLogQuery(db: Db, filter: ConnectionLogFilter) {
  let query = db.selectFrom('connection_log').selectAll();
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
  if (filter.profileId !== undefined) query = query.where('profile_id', '=', filter.profileId);
  if (filter.profiles !== undefined) query = query.where('profile_id', 'in', filter.profiles);
  if (filter.connectionId !== undefined) query = query.where('connection_id', '=', filter.connectionId);
  if (filter.until !== undefined) query = query.where('connected_at', '<', filter.until);
  const since = filter.since;
  if (since !== undefined)
    query = query.where((eb) => eb.or([eb('disconnected_at', 'is', null), eb('disconnected_at', '>=', since)]));
  if (filter.open === true) query = query.where('disconnected_at', 'is', null);
  if (filter.open === false) query = query.where('disconnected_at', 'is not', null);
  const ip = filter.ip;
  if (ip !== undefined) {
    // Each branch is an index of 0015 (address, start); an IPv4 address is never an ip_six.
    const tunnel = ip.family === 4 ? 'ip_four' : 'ip_six';
    query =
      ip.tunnelOnly === true
        ? query.where(tunnel, '=', ip.address)
        : query.where((eb) => eb.or([eb(tunnel, '=', ip.address), eb('originating_ip', '=', ip.address)]));
  }
  if (filter.nodeNumber !== undefined) query = query.where('node_number', '=', filter.nodeNumber);
  const at = filter.at;
  if (at !== undefined) {
    // Times are kept to the second: a session ended at 12:00:00 may have been open at 12:00:00.4,
    // so the second it ended in counts as open (two sessions may then answer for that second).
    query = query
      .where('connected_at', '<=', at)
      .where((eb) => eb.or([eb('disconnected_at', 'is', null), eb('disconnected_at', '>=', at)]));
  }
  const after = filter.after;
  if (after !== undefined) {
    // The bound alone first, so the page starts in the (start, id) index at the cursor.
    query = query
      .where('connected_at', '<=', after.connectedAt)
      .where((eb) =>
        eb.or([
          eb('connected_at', '<', after.connectedAt),
          eb.and([eb('connected_at', '=', after.connectedAt), eb('log_id', '<', after.logId)]),
        ]),
      );
  }
  return query.orderBy('connected_at', 'desc').orderBy('log_id', 'desc').limit(filter.limit);
}

/** A history row brought from another server (the eduVPN import), with its times as it kept them. */
export interface ImportedConnection {
  /** Derived from the row itself, so that a second import finds it. */
  readonly logId: string;
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly vpnProto: VpnProto;
  readonly connectionId: string;
  readonly nodeNumber: NodeNumber;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly connectedAt: string;
  readonly disconnectedAt: string | null;
  readonly bytesIn: number | null;
  readonly bytesOut: number | null;
}

/** Rows of one multi-row insert or look-up: well inside both databases' limits on parameters. */
const IMPORT_ROWS = 500;

/** The log ids among these that are stored. */
export async function storedLogIds(db: Db, logIds: readonly string[]): Promise<Set<string>> {
  const found = new Set<string>();
  for (const ids of sizeLimitedGroups(logIds, () => 1, IMPORT_ROWS)) {
    const rows = await db.selectFrom('connection_log').select('log_id').where('log_id', 'in', ids).execute();
    for (const row of rows) found.add(row.log_id);
  }
  return found;
}

/** Inserts history rows that are missing, many per statement; answers how many it inserted. */
export async function insertImportedConnections(db: Db, connections: readonly ImportedConnection[]): Promise<number> {
  let inserted = 0;
  for (const group of sizeLimitedGroups(connections, () => 1, IMPORT_ROWS)) {
    const result = await db
      .insertInto('connection_log')
      .values(group.map((connection) => historyRow({ ...connection, originatingIp: null })))
      // Also an open WireGuard row where one is open already (its partial unique index).
      .onConflict((conflict) => conflict.doNothing())
      .executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? 0n);
  }
  return inserted;
}
