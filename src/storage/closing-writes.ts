// A change's closing writes: what a change writes once, at the very end of its transaction, after
// all its other writes and locks (src/core/events.ts). Listeners describe them as data; storage
// alone holds their statements and the order they run in, whatever order they were asked for in.
// On PostgreSQL a change runs them as one statement, one round trip (runClosingWrites); a create
// makes them the end of its final statement, after it took its address pool's row
// (src/storage/new-peer.ts). SQLite, with no round trips, runs them one by one. The webhook outbox
// is one of them so that its rows, which need the subscriptions, cost a change no statement of its own.
import { sql, type RawBuilder, type Transaction } from 'kysely';
import { isPostgres } from './database.js';
import { auditRecordInsert, type NewAuditRecord } from './audit-log.js';
import { changeMarkerInsert } from './change-markers.js';
import {
  dropKeptAnswers,
  KEPT_ANSWERS_PER_STATEMENT,
  keptAnswersDrop,
  namedBy,
  type EndedHandOuts,
} from './idempotency.js';
import { listingGenerationBump } from './listing-generation.js';
import { insertRevocationNodes, revocationNodesInsert, type RevocationNodeRow } from './revocation-nodes.js';
import { insertRevocation, revocationInsert, type StoredRevocation } from './revocations.js';
import type { Database } from './schema.js';
import {
  insertOutboxDeliveries,
  OUTBOX_EVENTS_PER_STATEMENT,
  outboxInsert,
  type OutboxEvent,
} from './webhook-deliveries.js';

export type ClosingWrite =
  /** A revocation receipt and its configurations on their nodes (src/listeners/revocation-receipts.ts). */
  | {
      readonly kind: 'revocation-receipt';
      readonly revocation: Pick<StoredRevocation, 'revocationId' | 'userId' | 'reason' | 'requestedAt'>;
      readonly nodes: readonly Omit<RevocationNodeRow, 'appliedAt'>[];
    }
  /**
   * The webhook outbox's deliveries of the change's events, to every subscription that asked for
   * them (src/listeners/webhook-outbox.ts); `written` is told how many were written, when the
   * statement ran (possibly in an attempt that then rolls back).
   */
  | {
      readonly kind: 'webhook-deliveries';
      readonly events: readonly OutboxEvent[];
      readonly written: (deliveries: number) => void;
    }
  /**
   * Drops the kept answers (Idempotency-Key) that handed out what the change revoked or replaced
   * (configurations, admin keys, webhook secrets, enrollment tokens), so their private keys and
   * secrets are not kept any longer (src/listeners/kept-answers.ts).
   */
  | { readonly kind: 'kept-answers-dropped'; readonly ended: EndedHandOuts }
  /** The audit row of the Admin API call that made the change (src/listeners/audit-log.ts). */
  | { readonly kind: 'audit-record'; readonly record: NewAuditRecord }
  /** Moves the listing counter forward, by one unless `by` says (src/listeners/listing-generation.ts). */
  | { readonly kind: 'listing-generation'; readonly by?: number }
  /** The change's marker, read back when its COMMIT's outcome is unknown (src/storage/change-markers.ts). */
  | { readonly kind: 'change-marker'; readonly markerId: string };

/**
 * Where each kind runs among a change's closing writes. The listing counter's shard lock must be
 * the last lock a change takes: whoever holds a shard then holds every other lock it needs, so
 * two changes never wait for each other. A receipt, the outbox's deliveries and an audit row are
 * new rows no other change waits on; the kept answers dropped are those of what the change itself
 * revoked or replaced, whose rows it holds already; the marker says the change reached its end. A new kind fails the type check here
 * until it has its place.
 */
const CLOSING_PLACE: { readonly [K in ClosingWrite['kind']]: number } = {
  'revocation-receipt': 0,
  'kept-answers-dropped': 0,
  'webhook-deliveries': 1,
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

/**
 * Runs a change's closing writes, in closing order: on PostgreSQL as one statement (one round
 * trip, each write a WITH clause; a write too large for it runs on its own first), on SQLite
 * one by one (no round trips there).
 */
export async function runClosingWrites(trx: Transaction<Database>, writes: readonly ClosingWrite[]): Promise<void> {
  if (isPostgres(trx)) {
    const closing = closingStatementParts(await closingClauses(trx, writes));
    if (closing.clauses.length === 0) return;
    const { rows } = await sql<Record<string, number>>`WITH ${closing.ctes} SELECT 1 AS one${closing.counts}`.execute(
      trx,
    );
    closing.tell(rows[0] ?? {});
    return;
  }
  for (const write of inClosingOrder(writes)) await runOnItsOwn(trx, write);
}

/** A closing write as statements of its own, as many as it needs. */
async function runOnItsOwn(trx: Transaction<Database>, write: ClosingWrite): Promise<void> {
  if (write.kind === 'revocation-receipt') await insertReceipt(trx, write);
  else if (write.kind === 'webhook-deliveries') write.written(await insertOutboxDeliveries(trx, write.events));
  else if (write.kind === 'kept-answers-dropped') await dropKeptAnswers(trx, write.ended);
  else await singleRowStatement(write).execute(trx);
}

/** A closing write as a clause of a statement (a create's final one, or the closing writes' own). */
export interface ClosingClause {
  readonly statement: RawBuilder<unknown>;
  /** Set when the statement returns rows whose number its asker wants (the outbox's deliveries). */
  readonly written?: (rows: number) => void;
}

/** Closing clauses placed in a statement: its WITH clauses, its answer's count columns, and who to tell them. */
export interface ClosingStatementParts {
  readonly clauses: readonly ClosingClause[];
  /** `closing_0 AS (…), closing_1 AS (…)`, to follow `WITH` or a comma. */
  readonly ctes: RawBuilder<unknown>;
  /** `, (SELECT count(*) FROM closing_N)::integer AS written_N` for each clause that counts. */
  readonly counts: RawBuilder<unknown>;
  /** Tells each counting clause its count from the statement's answer row. */
  readonly tell: (row: Readonly<Record<string, unknown>>) => void;
}

export function closingStatementParts(clauses: readonly ClosingClause[]): ClosingStatementParts {
  const ctes = clauses.map((clause, index) => sql`${sql.id(`closing_${index}`)} AS (${clause.statement})`);
  const counts = clauses.flatMap((clause, index) =>
    clause.written === undefined
      ? []
      : [sql`, (SELECT count(*) FROM ${sql.id(`closing_${index}`)})::integer AS ${sql.id(`written_${index}`)}`],
  );
  return {
    clauses,
    ctes: sql.join(ctes),
    counts: sql.join(counts, sql``),
    tell: (row) => {
      for (const [index, clause] of clauses.entries()) clause.written?.(Number(row[`written_${index}`] ?? 0));
    },
  };
}

/**
 * For a statement that ends with the change's closing writes: runs now, on its own, a write too
 * large for one statement (a receipt of many configurations, the outbox's deliveries of many
 * events), and answers the others' statements, in closing order, for the caller to place as
 * WITH clauses.
 */
export async function closingClauses(
  trx: Transaction<Database>,
  writes: readonly ClosingWrite[],
): Promise<ClosingClause[]> {
  const clauses: ClosingClause[] = [];
  for (const write of inClosingOrder(writes)) {
    const asClauses = clausesOf(write, isPostgres(trx));
    if (asClauses !== null) clauses.push(...asClauses);
    else await runOnItsOwn(trx, write);
  }
  return clauses;
}

/**
 * The closing writes as clauses of a statement that is its own transaction (a create in one
 * statement): null when one is too large for a statement, and the change must be made in a
 * transaction.
 */
export function closingClausesOnly(writes: readonly ClosingWrite[], postgres: boolean): ClosingClause[] | null {
  const clauses: ClosingClause[] = [];
  for (const write of inClosingOrder(writes)) {
    const asClauses = clausesOf(write, postgres);
    if (asClauses === null) return null;
    clauses.push(...asClauses);
  }
  return clauses;
}

/** A receipt's configurations one statement takes; a larger receipt runs on its own. */
const RECEIPT_ROWS_PER_STATEMENT = 100;

/** A write as clauses of a statement; null: too large for one. */
function clausesOf(write: ClosingWrite, postgres: boolean): ClosingClause[] | null {
  switch (write.kind) {
    case 'revocation-receipt':
      if (write.nodes.length > RECEIPT_ROWS_PER_STATEMENT) return null;
      // Its rows' foreign key to the receipt is checked at the statement's end, when both are in.
      return [
        { statement: revocationInsert(write.revocation) },
        ...(write.nodes.length === 0 ? [] : [{ statement: revocationNodesInsert(write.nodes) }]),
      ];
    case 'webhook-deliveries':
      if (write.events.length > OUTBOX_EVENTS_PER_STATEMENT) return null;
      return [{ statement: outboxInsert(write.events, postgres), written: write.written }];
    case 'kept-answers-dropped': {
      const names = namedBy(write.ended).length;
      if (names === 0) return [];
      if (names > KEPT_ANSWERS_PER_STATEMENT) return null;
      return [{ statement: keptAnswersDrop(write.ended) }];
    }
    default:
      return [{ statement: singleRowStatement(write) }];
  }
}

async function insertReceipt(
  trx: Transaction<Database>,
  write: Extract<ClosingWrite, { kind: 'revocation-receipt' }>,
): Promise<void> {
  await insertRevocation(trx, write.revocation);
  await insertRevocationNodes(trx, write.nodes);
}

function singleRowStatement(
  write: Exclude<ClosingWrite, { kind: 'revocation-receipt' | 'webhook-deliveries' | 'kept-answers-dropped' }>,
): RawBuilder<unknown> {
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
