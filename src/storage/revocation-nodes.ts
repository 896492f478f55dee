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
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import type { Db } from './database.js';
import { OPEN_REVOCATION_STATES } from './revocations.js';
import { listIn } from '../shared/list-in.js';

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

/**
 * What one call's nodes confirmed gone, for that call's receipts: a removal counts for these
 * receipts only. (Another call's receipt may hold a row for the same configuration on the same
 * node, made after the configuration came back, that this removal says nothing about.)
 */
export interface ReceiptConfirmation {
  readonly revocationIds: readonly string[];
  readonly confirmed: readonly ConfirmedRemoval[];
}

/** Parameters per UPDATE at most: far below both dialects' limits. */
const CONFIRMATION_PARAMETERS = 1000;

/** One term of a confirming UPDATE: these receipts' rows for these configurations on one node. */
interface ConfirmationTerm {
  readonly revocationIds: readonly string[];
  readonly connectionIds: readonly string[];
}

/**
 * Marks each confirmation's removals as confirmed on its own receipts' rows still pending, in
 * one statement per node for many confirmations; answers how many rows it marked.
 */
export async function confirmRevocationNodes(
  db: Db,
  confirmations: readonly ReceiptConfirmation[],
  at: string,
): Promise<number> {
  const byNode = new Map<NodeNumber, ConfirmationTerm[]>();
  for (const { revocationIds, confirmed } of confirmations) {
    if (revocationIds.length === 0) continue;
    const ofThisCall = new Map<NodeNumber, string[]>();
    for (const { nodeNumber, connectionId } of confirmed) listIn(ofThisCall, nodeNumber).push(connectionId);
    for (const [nodeNumber, connectionIds] of ofThisCall) {
      // A long list (a reconcile pass confirms every pending receipt of a node at once) in parts.
      for (let start = 0; start < connectionIds.length; start += INSERT_ROWS) {
        listIn(byNode, nodeNumber).push({
          revocationIds,
          connectionIds: connectionIds.slice(start, start + INSERT_ROWS),
        });
      }
    }
  }
  let marked = 0;
  for (const [nodeNumber, terms] of byNode) {
    const termSize = (term: ConfirmationTerm) => term.revocationIds.length + term.connectionIds.length;
    for (const statement of sizeLimitedGroups(terms, termSize, CONFIRMATION_PARAMETERS)) {
      // The node and the pending test stay outside the terms: SQLite then reads the node's
      // pending rows (few, and the same plan as for one term of a reconcile pass's long lists)
      // instead of probing the primary key for every pair of a term's two lists.
      const result = await db
        .updateTable('revocation_nodes')
        .set({ applied_at: at })
        .where('node_number', '=', nodeNumber)
        .where('applied_at', 'is', null)
        .where((eb) =>
          eb.or(
            statement.map((term) =>
              eb.and([eb('revocation_id', 'in', term.revocationIds), eb('connection_id', 'in', term.connectionIds)]),
            ),
          ),
        )
        .executeTakeFirst();
      marked += Number(result.numUpdatedRows);
    }
  }
  return marked;
}

/** The nodes that have not confirmed a configuration of an open receipt asked for before `before` (ATOM). */
export async function nodesWithRevocationPendingBefore(db: Db, before: string): Promise<Set<NodeNumber>> {
  // Along the open receipts (few), then each one's rows by the primary key; not along the nodes'
  // pending rows, which also hold those of superseded receipts, for good. One statement for all
  // nodes: every instance asks every two seconds.
  const rows = await db
    .selectFrom('revocations as r')
    .innerJoin('revocation_nodes as n', 'n.revocation_id', 'r.revocation_id')
    .select('n.node_number')
    .distinct()
    .where('r.state', 'in', OPEN_REVOCATION_STATES)
    .where('r.requested_at', '<', before)
    .where('n.applied_at', 'is', null)
    .execute();
  return new Set(rows.map((row) => asNodeNumber(row.node_number)));
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
