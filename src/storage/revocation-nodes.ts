// Queries on `revocation_nodes`: each configuration of a revocation receipt on its node, and
// when the node confirmed it gone (remove_peer answered, OpenVPN client disconnected, or a
// reconcile pass found it no longer there). A node's part of a receipt is applied once all of
// its rows are.
import {
  asConnectionId,
  asNodeNumber,
  asProfileId,
  type ConnectionId,
  type NodeNumber,
  type ProfileId,
  type VpnProto,
} from '../shared/ids.js';
import { sql, type RawBuilder } from 'kysely';
import type { Db } from './database.js';
import { OPEN_REVOCATION_STATES } from './revocations.js';

export interface RevocationNodeRow {
  readonly revocationId: string;
  readonly nodeNumber: NodeNumber;
  /** A WireGuard public key or an OpenVPN certificate's Common Name. */
  readonly connectionId: string;
  readonly vpnProto: VpnProto;
  readonly profileId: ProfileId;
  readonly appliedAt: string | null;
}

/** A configuration a node confirmed gone. */
export interface ConfirmedRemoval {
  readonly nodeNumber: NodeNumber;
  readonly connectionId: string;
}

/** Rows per INSERT: six columns, far below both dialects' parameter limits. */
const INSERT_ROWS = 500;

/** A receipt's rows as one statement (at most INSERT_ROWS), for a change's closing writes in one statement. */
export function revocationNodesInsert(rows: readonly Omit<RevocationNodeRow, 'appliedAt'>[]): RawBuilder<unknown> {
  if (rows.length === 0 || rows.length > INSERT_ROWS)
    throw new Error(`a receipt's rows in one statement: 1 to ${INSERT_ROWS}`);
  const values = rows.map(
    (row) =>
      sql`(${row.revocationId}, ${row.nodeNumber}, ${row.connectionId}, ${row.vpnProto}, ${row.profileId}, NULL)`,
  );
  return sql`INSERT INTO revocation_nodes (revocation_id, node_number, connection_id, vpn_proto, profile_id, applied_at)
    VALUES ${sql.join(values)}`;
}

export async function insertRevocationNodes(
  db: Db,
  rows: readonly Omit<RevocationNodeRow, 'appliedAt'>[],
): Promise<void> {
  for (let start = 0; start < rows.length; start += INSERT_ROWS) {
    await db
      .insertInto('revocation_nodes')
      .values(
        rows.slice(start, start + INSERT_ROWS).map((row) => ({
          revocation_id: row.revocationId,
          node_number: row.nodeNumber,
          connection_id: row.connectionId,
          vpn_proto: row.vpnProto,
          profile_id: row.profileId,
          applied_at: null,
        })),
      )
      .execute();
  }
}

export async function revocationNodeRows(db: Db, revocationIds: readonly string[]): Promise<RevocationNodeRow[]> {
  if (revocationIds.length === 0) return [];
  const rows = await db
    .selectFrom('revocation_nodes')
    .selectAll()
    .where('revocation_id', 'in', revocationIds)
    .orderBy('revocation_id')
    .orderBy('node_number')
    .orderBy('connection_id')
    .execute();
  return rows.map((row) => ({
    revocationId: row.revocation_id,
    nodeNumber: asNodeNumber(row.node_number),
    connectionId: row.connection_id,
    vpnProto: row.vpn_proto as VpnProto,
    profileId: asProfileId(row.profile_id),
    appliedAt: row.applied_at,
  }));
}

/** Marks the removals as confirmed on the given receipts' rows still pending; answers how many rows it marked. */
export async function confirmRevocationNodes(
  db: Db,
  revocationIds: readonly string[],
  confirmed: readonly ConfirmedRemoval[],
  at: string,
): Promise<number> {
  if (revocationIds.length === 0 || confirmed.length === 0) return 0;
  const byNode = new Map<NodeNumber, string[]>();
  for (const { nodeNumber, connectionId } of confirmed)
    byNode.set(nodeNumber, [...(byNode.get(nodeNumber) ?? []), connectionId]);
  let marked = 0;
  for (const [nodeNumber, connectionIds] of byNode) {
    for (let start = 0; start < connectionIds.length; start += INSERT_ROWS) {
      const result = await db
        .updateTable('revocation_nodes')
        .set({ applied_at: at })
        .where('revocation_id', 'in', revocationIds)
        .where('node_number', '=', nodeNumber)
        .where('connection_id', 'in', connectionIds.slice(start, start + INSERT_ROWS))
        .where('applied_at', 'is', null)
        .executeTakeFirst();
      marked += Number(result.numUpdatedRows);
    }
  }
  return marked;
}

/** The configurations of open receipts that a node has not confirmed gone yet, with when their receipt was asked for. */
export async function pendingRevocationsOnNode(
  db: Db,
  nodeNumber: NodeNumber,
): Promise<
  {
    readonly revocationId: string;
    readonly connectionId: ConnectionId;
    readonly vpnProto: VpnProto;
    readonly requestedAt: string;
  }[]
> {
  const rows = await db
    .selectFrom('revocation_nodes as n')
    .innerJoin('revocations as r', 'r.revocation_id', 'n.revocation_id')
    .select(['n.revocation_id', 'n.connection_id', 'n.vpn_proto', 'r.requested_at'])
    .where('n.node_number', '=', nodeNumber)
    .where('n.applied_at', 'is', null)
    .where('r.state', 'in', OPEN_REVOCATION_STATES)
    .execute();
  return rows.map((row) => ({
    revocationId: row.revocation_id,
    connectionId: asConnectionId(row.connection_id),
    vpnProto: row.vpn_proto as VpnProto,
    requestedAt: row.requested_at,
  }));
}
