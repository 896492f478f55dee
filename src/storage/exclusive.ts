// Work that only one portal instance may do at a time (a full reconcile pass, the work on one
// node, the housekeeping): on PostgreSQL session advisory locks, taken with pg_try_advisory_lock,
// so an instance that finds one taken skips that work (or tries again later) instead of queueing
// behind it. An instance holds all of its locks on one connection, reserved while it holds any:
// a full pass and the passes for single nodes running beside it cost the pool one connection
// between them, not one each. If the instance dies, its connection closes and the server
// releases its locks. SQLite serves one portal host, which keeps its own work apart. A write
// that must not run in two instances at once takes a transaction lock under the same namespace
// instead.
import { sql } from 'kysely';
import { isPostgres, type Db } from './database.js';

/** First key of every advisory lock the portal takes ("vpnp"), so other applications' locks do not collide. */
const LOCK_NAMESPACE = 0x76706e70;

export type ExclusiveResult<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

/** The connection an instance's locks are held on, and how many runs use it now. */
interface LockSession {
  users: number;
  readonly connection: Promise<Db>;
  /** Gives the connection back to the pool (which closes it if it broke). */
  readonly close: () => void;
}

/**
 * One portal instance's exclusive work. Locks are not counted within an instance (PostgreSQL
 * would grant a name its session holds again): the caller never runs two pieces of work under
 * one name at once (the reconcile scheduler keeps them apart).
 */
export class ExclusiveLocks {
  #session: LockSession | null = null;

  constructor(private readonly db: Db) {}

  /** Runs `work` unless another portal instance is running work under the same `name` right now. */
  async run<T>(name: string, work: () => Promise<T>): Promise<ExclusiveResult<T>> {
    if (!isPostgres(this.db)) return { ran: true, value: await work() };
    const { session, connection, locked } = await this.#take(name);
    try {
      if (!locked) return { ran: false };
      try {
        return { ran: true, value: await work() };
      } finally {
        // A broken connection has lost the lock already; there is nothing left to release.
        await sql`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, hashtext(${name}))`
          .execute(connection)
          .catch(() => this.#discard(session));
      }
    } finally {
      this.#leave(session);
    }
  }

  /**
   * Tries the lock on the instance's connection. One that broke since it was reserved (the
   * server restarted, or ended it) has lost its locks: the runs under way on it go on, and this
   * one tries once more on a fresh connection.
   */
  async #take(name: string): Promise<{ session: LockSession; connection: Db; locked: boolean }> {
    for (let retried = false; ; retried = true) {
      const fresh = this.#session === null;
      const session = this.#join();
      try {
        const connection = await session.connection;
        return { session, connection, locked: await tryLock(connection, name) };
      } catch (error) {
        this.#discard(session);
        this.#leave(session);
        if (fresh || retried) throw error;
      }
    }
  }

  /** Later runs take a fresh connection; this one goes back to the pool once its runs are done. */
  #discard(session: LockSession): void {
    if (this.#session === session) this.#session = null;
  }

  #join(): LockSession {
    const session = this.#session ?? openSession(this.db);
    this.#session = session;
    session.users++;
    return session;
  }

  #leave(session: LockSession): void {
    session.users--;
    if (session.users > 0) return;
    session.close();
    this.#discard(session);
  }
}

/** Reserves a connection of the pool until `close()`. */
function openSession(db: Db): LockSession {
  let close = (): void => {};
  const closed = new Promise<void>((resolve) => {
    close = resolve;
  });
  const connection = new Promise<Db>((resolve, reject) => {
    db.connection()
      .execute(async (reserved) => {
        resolve(reserved);
        await closed;
      })
      .catch(reject);
  });
  // Each run awaits it, and reports its failure; this keeps a failure no run awaits from being unhandled.
  connection.catch(() => undefined);
  return { users: 0, connection, close };
}

async function tryLock(connection: Db, name: string): Promise<boolean> {
  const { rows } = await sql<{
    locked: boolean;
  }>`SELECT pg_try_advisory_lock(${LOCK_NAMESPACE}, hashtext(${name})) AS locked`.execute(connection);
  return rows[0]?.locked === true;
}

/**
 * Waits until no other transaction holds `name`, and holds it until this transaction ends
 * (PostgreSQL; SQLite's write transactions run one at a time anyway). Call inside a transaction.
 */
export async function lockForTransaction(db: Db, name: string): Promise<void> {
  if (isPostgres(db)) await sql`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}, hashtext(${name}))`.execute(db);
}
