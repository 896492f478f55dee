// Work that only one portal instance may do at a time (the reconcile pass): on PostgreSQL a
// session advisory lock, taken with pg_try_advisory_lock on one connection reserved for the
// whole pass, so an instance that finds it taken skips its pass instead of queueing behind
// it. If the instance dies, its connection closes and the server releases the lock. SQLite
// serves one portal host, whose passes already run one at a time. A write that must not run in
// two instances at once takes a transaction lock under the same namespace instead.
import { sql } from 'kysely';
import { isPostgres, type Db } from './database.js';

/** First key of every advisory lock the portal takes ("vpnp"), so other applications' locks do not collide. */
const LOCK_NAMESPACE = 0x76706e70;

export type ExclusiveResult<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

/** Runs `work` unless another portal instance is running work under the same `name` right now. */
export async function runExclusively<T>(db: Db, name: string, work: () => Promise<T>): Promise<ExclusiveResult<T>> {
  if (!isPostgres(db)) return { ran: true, value: await work() };
  return db.connection().execute(async (connection) => {
    const { rows } = await sql<{
      locked: boolean;
    }>`SELECT pg_try_advisory_lock(${LOCK_NAMESPACE}, hashtext(${name})) AS locked`.execute(connection);
    if (rows[0]?.locked !== true) return { ran: false };
    try {
      return { ran: true, value: await work() };
    } finally {
      // A broken connection has lost the lock already; there is nothing left to release.
      await sql`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, hashtext(${name}))`
        .execute(connection)
        .catch(() => undefined);
    }
  });
}

/**
 * Waits until no other transaction holds `name`, and holds it until this transaction ends
 * (PostgreSQL; SQLite's write transactions run one at a time anyway). Call inside a transaction.
 */
export async function lockForTransaction(db: Db, name: string): Promise<void> {
  if (isPostgres(db)) await sql`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}, hashtext(${name}))`.execute(db);
}
