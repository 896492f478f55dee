// The change counter behind node instructions. Every transaction that changes whether a
// WireGuard peer belongs on its node (create, disable, enable, delete, destroy, expiry)
// takes a new number after it has locked the rows it changes, so for any one peer the
// numbers follow the order in which those changes commit. Each add_peer and remove_peer
// carries the number of the state it comes from; the node agent ignores an instruction
// older than the last one it applied for that key, so an add read before a revocation can
// never undo it, however late it arrives and whichever portal instance sent it.
import { sql, type RawBuilder, type Transaction } from 'kysely';
import { isPostgres, type Db } from './database.js';
import type { Database } from './schema.js';

/** A number of the change counter; higher is newer. */
export type Revision = number & { readonly __revision: true };

/** Takes the next number. Call inside the transaction that makes the change, after its row locks. */
export async function nextRevision(trx: Transaction<Database>): Promise<Revision> {
  const { rows } = isPostgres(trx)
    ? await sql<{ value: string | number }>`SELECT nextval('change_revision') AS value`.execute(trx)
    : await sql<{
        value: string | number;
      }>`UPDATE change_revision SET value = value + 1 WHERE id = 1 RETURNING value`.execute(trx);
  return toRevision(rows[0]?.value);
}

/**
 * A column value that takes the next number: on PostgreSQL `nextval(…)` inside the statement
 * itself, so each row gets its number only once the statement holds that row's lock; on
 * SQLite, whose writers run one at a time, one number for the whole statement.
 */
export async function revisionValue(trx: Transaction<Database>): Promise<RawBuilder<unknown> | Revision> {
  return isPostgres(trx) ? sql`nextval('change_revision')` : nextRevision(trx);
}

/**
 * The newest number handed out so far: a removal of a key the database no longer knows
 * carries it, which is at least the number of the deletion that made the key unknown.
 */
export async function latestRevision(db: Db): Promise<Revision> {
  const { rows } = isPostgres(db)
    ? await sql<{
        value: string | number;
      }>`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS value FROM change_revision`.execute(db)
    : await sql<{ value: string | number }>`SELECT value FROM change_revision WHERE id = 1`.execute(db);
  return toRevision(rows[0]?.value);
}

/**
 * Moves the counter forward to at least `revision` (db copy: the copy's numbers must go on
 * from the source's, or the nodes would ignore its instructions as older than what they hold),
 * never back. On PostgreSQL `setval` is no part of the transaction and sets whatever it is
 * given: two callers that read the counter at once would each set their own number, the lower
 * one last. `ALTER SEQUENCE` takes the lock that `nextval` and `setval` wait for, until this
 * transaction ends, so the read and the set below are one step. Take the row locks the caller
 * needs first: nothing in the transaction should wait once the counter has moved, since a
 * rollback would not move it back.
 */
export async function advanceRevisionTo(trx: Transaction<Database>, revision: Revision): Promise<void> {
  if (isPostgres(trx)) await sql`ALTER SEQUENCE change_revision INCREMENT BY 1`.execute(trx);
  if (revision <= (await latestRevision(trx))) return;
  if (isPostgres(trx)) await sql`SELECT setval('change_revision', ${revision})`.execute(trx);
  else await sql`UPDATE change_revision SET value = ${revision} WHERE id = 1`.execute(trx);
}

/** Revisions are bigint columns: PostgreSQL hands them over as text. */
export function toRevision(value: string | number | bigint | undefined): Revision {
  const revision = Number(value ?? 0);
  if (!Number.isSafeInteger(revision) || revision < 0) throw new Error(`invalid change revision ${String(value)}`);
  return revision as Revision;
}
