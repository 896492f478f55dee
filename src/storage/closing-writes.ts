// A change's closing writes: what a change writes once, at the very end of its transaction, after
// all its other writes and locks (src/core/events.ts). Listeners describe them as data; storage
// alone holds their statements and the order they run in, whatever order they were asked for in.
// A plain change runs them one by one (runClosingWrites); a create makes them the end of its final
// statement, after it took its address pool's row (src/storage/new-peer.ts).
import { sql, type RawBuilder, type Transaction } from 'kysely';
import { auditRecordInsert, type NewAuditRecord } from './audit-log.js';
import { changeMarkerInsert } from './change-markers.js';
import { listingGenerationBump } from './listing-generation.js';
import { insertRevocationNodes, type RevocationNodeRow } from './revocation-nodes.js';
import { insertRevocation, type StoredRevocation } from './revocations.js';
import type { Database } from './schema.js';

export type ClosingWrite =
  /** A revocation receipt and its configurations on their nodes (src/listeners/revocation-receipts.ts). */
  | {
      readonly kind: 'revocation-receipt';
      readonly revocation: Pick<StoredRevocation, 'revocationId' | 'userId' | 'reason' | 'requestedAt'>;
      readonly nodes: readonly Omit<RevocationNodeRow, 'appliedAt'>[];
    }
  /** The audit row of the Admin API call that made the change (src/listeners/audit-log.ts). */
  | { readonly kind: 'audit-record'; readonly record: NewAuditRecord }
  /** Moves the listing counter forward, by one unless `by` says (src/listeners/listing-generation.ts). */
  | { readonly kind: 'listing-generation'; readonly by?: number }
  /** The change's marker, read back when its COMMIT's outcome is unknown (src/storage/change-markers.ts). */
  | { readonly kind: 'change-marker'; readonly markerId: string };

/**
 * Where each kind runs among a change's closing writes. The listing counter's shard lock must be
 * the last lock a change takes: whoever holds a shard then holds every other lock it needs, so
 * two changes never wait for each other. A receipt and an audit row are new rows no other change
 * waits on; the marker says the change reached its end. A new kind fails the type check here
 * until it has its place.
 */
const CLOSING_PLACE: { readonly [K in ClosingWrite['kind']]: number } = {
  'revocation-receipt': 0,
  'audit-record': 1,
  'listing-generation': 2,
  'change-marker': 3,
};

/**
 * The writes in the order they run (a stable sort: writes of one kind keep the order they were
 * asked in). Moves of the listing counter become one move by their sum: two upserts of one
 * shard row in one statement are an error on PostgreSQL, and each picks its shard at random.
 */
export function inClosingOrder(writes: readonly ClosingWrite[]): ClosingWrite[] {
  const moves = writes.filter((write) => write.kind === 'listing-generation');
  const by = moves.reduce((sum, move) => sum + (move.by ?? 1), 0);
  const merged: ClosingWrite[] =
    moves.length <= 1
      ? [...writes]
      : [...writes.filter((write) => write.kind !== 'listing-generation'), { kind: 'listing-generation', by }];
  return merged.sort((a, b) => CLOSING_PLACE[a.kind] - CLOSING_PLACE[b.kind]);
}

/** Runs a change's closing writes one by one, in closing order. */
export async function runClosingWrites(trx: Transaction<Database>, writes: readonly ClosingWrite[]): Promise<void> {
  for (const write of inClosingOrder(writes)) {
    if (write.kind === 'revocation-receipt') await insertReceipt(trx, write);
    else await singleRowStatement(write).execute(trx);
  }
}

/**
 * For a statement that ends with the change's closing writes (a create's final one): runs a
 * receipt now, on its own (it may be many rows, and holds no lock another change waits on), and
 * answers the others' statements, in closing order, for the caller to place as WITH clauses.
 */
export async function closingClauses(
  trx: Transaction<Database>,
  writes: readonly ClosingWrite[],
): Promise<RawBuilder<unknown>[]> {
  const clauses: RawBuilder<unknown>[] = [];
  for (const write of inClosingOrder(writes)) {
    if (write.kind === 'revocation-receipt') await insertReceipt(trx, write);
    else clauses.push(singleRowStatement(write));
  }
  return clauses;
}

async function insertReceipt(
  trx: Transaction<Database>,
  write: Extract<ClosingWrite, { kind: 'revocation-receipt' }>,
): Promise<void> {
  await insertRevocation(trx, write.revocation);
  await insertRevocationNodes(trx, write.nodes);
}

function singleRowStatement(write: Exclude<ClosingWrite, { kind: 'revocation-receipt' }>): RawBuilder<unknown> {
  switch (write.kind) {
    case 'audit-record':
      return auditRecordInsert(write.record);
    case 'listing-generation':
      return listingGenerationBump(write.by ?? 1);
    case 'change-marker':
      return changeMarkerInsert(write.markerId);
    default:
      write satisfies never;
      return sql``;
  }
}
