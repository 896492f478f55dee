// Queries on `connection_log`: the history of connections, as the nodes report them.
import { randomUUID } from 'node:crypto';
import type { NodeNumber, ProfileId, UserId, VpnProto } from '../shared/ids.js';
import { formatAtom } from '../shared/time.js';
import type { Executor } from './database.js';

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

export async function openConnection(db: Executor, connection: OpenedConnection): Promise<void> {
  await db
    .insertInto('connection_log')
    .values({
      log_id: randomUUID(),
      user_id: connection.userId,
      profile_id: connection.profileId,
      vpn_proto: connection.vpnProto,
      connection_id: connection.connectionId,
      node_number: connection.nodeNumber,
      ip_four: connection.ipFour,
      ip_six: connection.ipSix,
      originating_ip: connection.originatingIp,
      connected_at: formatAtom(connection.connectedAt),
      disconnected_at: null,
      bytes_in: null,
      bytes_out: null,
    })
    .execute();
}

/**
 * Closes the open entries of a connection on a node (normally one). The configuration may be
 * gone already: the log is looked up by connection id only, as the reference does.
 */
export async function closeConnection(
  db: Executor,
  closed: { connectionId: string; nodeNumber: NodeNumber; disconnectedAt: Date; bytesIn: number; bytesOut: number },
): Promise<number> {
  const result = await db
    .updateTable('connection_log')
    .set({ disconnected_at: formatAtom(closed.disconnectedAt), bytes_in: closed.bytesIn, bytes_out: closed.bytesOut })
    .where('connection_id', '=', closed.connectionId)
    .where('node_number', '=', closed.nodeNumber)
    .where('disconnected_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
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
export async function connectionHistory(db: Executor, connectionId: string): Promise<ConnectionLogEntry[]> {
  const rows = await db.selectFrom('connection_log').selectAll().where('connection_id', '=', connectionId).orderBy('connected_at').execute();
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
