// Work that only one portal instance may do at a time (a full reconcile pass, the work on one
// node, the housekeeping): on PostgreSQL session advisory locks, taken with pg_try_advisory_lock,
// so an instance that finds one taken skips that work (or tries again later) instead of queueing
// behind it. An instance holds all of its locks on one connection, reserved while it holds any:
// a full pass and the passes for single nodes running beside it cost the pool one connection
// between them, not one each. If the instance dies, its connection closes and the server
// releases its locks; if its host vanishes without closing it (a power cut, a network gone), the
// server notices within a minute by the keepalives this connection asks for (LockKeepalive),
// not after the system's two hours. A connection that ends under a run (a server restart, a
// session ended) has lost its locks: the run is told (HeldLock), and stops at its next step
// rather than go on beside the instance that takes the lock next; so has one whose statement got
// no answer in time (the server may have ended its session meanwhile), and the instance asks
// that cheap question itself at the keepalive interval while it holds locks, so a silence (a
// network partition, healed or not) is noticed though no run sends anything. A statement the server
// refused with an error (a try that failed) fails its own run only: the connection, and every
// lock held on it, is fine. SQLite serves one portal host, which keeps its own work apart. A write
// that must not run in two instances at once takes a transaction lock under the same namespace
// instead.
import { sql } from 'kysely';
import { isPostgres, reserveConnection, type Db, type ReservedConnection } from './database.js';
import { isConnectionLost } from './errors.js';

/** First key of every advisory lock the portal takes ("vpnp"), so other applications' locks do not collide. */
const LOCK_NAMESPACE = 0x76706e70;

export type ExclusiveResult<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

/**
 * How soon the server gives up on a lock connection whose peer went silent (PostgreSQL's
 * tcp_keepalives_* and tcp_user_timeout for that session): first probe after `idleSeconds`
 * without traffic, then one every `intervalSeconds`, gone after `count` unanswered; data it
 * sent unacknowledged for as long ends it too. Loopback and TCP only (a Unix socket has no peer
 * to lose).
 */
export interface LockKeepalive {
  readonly idleSeconds: number;
  readonly intervalSeconds: number;
  readonly count: number;
}

/** About 40 s: a dead instance holds its locks that long, and a live one is never taken for dead. */
export const DEFAULT_LOCK_KEEPALIVE: LockKeepalive = { idleSeconds: 20, intervalSeconds: 5, count: 4 };

/** A run's lock was lost (its connection ended): another instance may hold it now. */
export class LockLost extends Error {
  override readonly name = 'LockLost';

  constructor(readonly lockName: string) {
    super(`the lock "${lockName}" was lost with its database connection; the work under it stops`);
  }
}

/** What a run knows of its lock while it works. */
export interface HeldLock {
  /** True once the lock's connection ended: another instance may be doing the same work. */
  readonly lost: boolean;
  /** Throws LockLost once the lock is lost: called before each step that must not run twice. */
  check(): void;
}

/** The connection an instance's locks are held on, and how many runs use it now. */
interface LockSession {
  users: number;
  readonly connection: Promise<ReservedConnection>;
  /** Its connection ended or broke: every lock on it is gone. */
  lost: boolean;
  /** A lock on it could not be released: it is closed, not given back, once its runs are done. */
  closeOnLeave: boolean;
  /** Its last run left: no more checks, and the connection goes back (or is closed). */
  ended: boolean;
  /** The next check of its connection, while its runs last. */
  nextCheck: NodeJS.Timeout | null;
  /** The check under way: the connection goes back only once it has settled. Never rejects. */
  checking: Promise<void> | null;
}

/** On SQLite: one host, no lock to lose. */
const NEVER_LOST: HeldLock = { lost: false, check: () => {} };

/**
 * One portal instance's exclusive work. Locks are not counted within an instance (PostgreSQL
 * would grant a name its session holds again): the caller never runs two pieces of work under
 * one name at once (the reconcile scheduler keeps them apart).
 */
export class ExclusiveLocks {
  #session: LockSession | null = null;

  /** The settings each new lock connection asks for; null once the server refused them (not asked again). */
  #keepalive: LockKeepalive | null;

  /** How often a lock connection in use is checked, and how long its answer may take (see `watch`). */
  readonly #checks: { readonly everyMs: number; readonly timeoutMs: number };

  /** `onKeepaliveRefused`: told once, when the server refuses the keepalive settings (the locks work without them). */
  constructor(
    private readonly db: Db,
    keepalive: LockKeepalive = DEFAULT_LOCK_KEEPALIVE,
    private readonly onKeepaliveRefused: (error: unknown) => void = () => {},
  ) {
    this.#keepalive = keepalive;
    // At the keepalive interval, answered within the probes' time: a silent connection is taken
    // for lost (everyMs + timeoutMs, 25 s by default) before the server lets its locks go (40 s).
    const everyMs = Math.max(1, keepalive.intervalSeconds) * 1000;
    this.#checks = { everyMs, timeoutMs: everyMs * Math.max(1, keepalive.count) };
  }

  /** Runs `work` unless another portal instance is running work under the same `name` right now. */
  async run<T>(name: string, work: (held: HeldLock) => Promise<T>): Promise<ExclusiveResult<T>> {
    if (!isPostgres(this.db)) return { ran: true, value: await work(NEVER_LOST) };
    const { session, connection, locked } = await this.#take(name);
    try {
      if (!locked) return { ran: false };
      const held: HeldLock = {
        get lost() {
          return session.lost;
        },
        check: () => {
          if (session.lost) throw new LockLost(name);
        },
      };
      try {
        return { ran: true, value: await work(held) };
      } finally {
        // A lost connection has lost the lock already; there is nothing left to release. One the
        // server refused to release (a statement timeout) is closed, which releases it.
        if (!session.lost)
          await connection.query('SELECT pg_advisory_unlock($1, hashtext($2))', [LOCK_NAMESPACE, name]).catch(() => {
            session.closeOnLeave = true;
            this.#discard(session);
          });
      }
    } finally {
      this.#leave(session);
    }
  }

  /**
   * Tries the lock on the instance's connection. One that broke since it was reserved (the
   * server restarted, or ended it) has lost its locks: the runs under way on it are told, and
   * this one tries once more on a fresh connection. A try the server refused with an error (the
   * connection is fine) fails this run alone: the locks held on the connection are still held.
   */
  async #take(name: string): Promise<{ session: LockSession; connection: ReservedConnection; locked: boolean }> {
    for (let retried = false; ; retried = true) {
      const fresh = this.#session === null;
      const session = this.#join();
      let connection: ReservedConnection;
      try {
        connection = await session.connection;
      } catch (error) {
        // No connection, so no lock on it: a session opened beside this run's may work.
        session.lost = true;
        this.#forget(session);
        if (fresh || retried) throw error;
        continue;
      }
      try {
        return { session, connection, locked: await tryLock(connection, name) };
      } catch (error) {
        // A connection the try found broken told its loss (onLost) before this failure came.
        if (!session.lost) {
          this.#leave(session);
          throw error;
        }
        this.#forget(session);
        if (fresh || retried) throw error;
      }
    }
  }

  /** This run's use of a lost session ends; later runs take a fresh connection. */
  #forget(session: LockSession): void {
    this.#discard(session);
    this.#leave(session);
  }

  /** Later runs take a fresh connection; this one goes back to the pool once its runs are done. */
  #discard(session: LockSession): void {
    if (this.#session === session) this.#session = null;
  }

  #join(): LockSession {
    const current = this.#session;
    let session = current;
    if (session === null || session.lost) {
      session = openSession(this.db, this.#keepalive, (error) => {
        if (this.#keepalive === null) return;
        this.#keepalive = null;
        this.onKeepaliveRefused(error);
      });
      const opened = session;
      void session.connection.then(
        (connection) => watch(opened, connection, this.#checks.everyMs, this.#checks.timeoutMs),
        () => undefined,
      );
    }
    this.#session = session;
    session.users++;
    return session;
  }

  #leave(session: LockSession): void {
    session.users--;
    if (session.users > 0) return;
    this.#discard(session);
    session.ended = true;
    if (session.nextCheck !== null) clearTimeout(session.nextCheck);
    void Promise.all([session.connection, session.checking]).then(
      ([connection]) => connection.release(session.lost || session.closeOnLeave),
      () => undefined,
    );
  }
}

/** Reserves a connection of the pool, asking the server to notice soon when its peer goes silent. */
function openSession(
  db: Db,
  keepalive: LockKeepalive | null,
  onKeepaliveRefused: (error: unknown) => void,
): LockSession {
  const session: LockSession = {
    users: 0,
    lost: false,
    closeOnLeave: false,
    ended: false,
    nextCheck: null,
    checking: null,
    connection: (async () => {
      const connection = await reserveConnection(db);
      let broken = false;
      connection.onLost(() => {
        broken = true;
        session.lost = true;
      });
      if (keepalive === null) return connection;
      try {
        const userTimeoutMs = (keepalive.idleSeconds + keepalive.intervalSeconds * keepalive.count) * 1000;
        await connection.query(
          `SELECT set_config('tcp_keepalives_idle', $1, false), set_config('tcp_keepalives_interval', $2, false),
                  set_config('tcp_keepalives_count', $3, false), set_config('tcp_user_timeout', $4, false)`,
          [keepalive.idleSeconds, keepalive.intervalSeconds, keepalive.count, userTimeoutMs].map((value) =>
            String(Math.round(value)),
          ),
        );
      } catch (error) {
        // The connection broke under the settings (or gave no answer in time): no refusal of them.
        if (isConnectionLost(error) || broken) {
          connection.release(true);
          throw error;
        }
        // A server before PostgreSQL 12 (no tcp_user_timeout) or a pooler that refuses the
        // settings: the locks still work, freed after a vanished host only by the system's
        // keepalive, as before these settings.
        onKeepaliveRefused(error);
      }
      return connection;
    })(),
  };
  // Each run awaits it, and reports its failure; this keeps a failure no run awaits from being unhandled.
  session.connection.catch(() => undefined);
  return session;
}

/**
 * While the session's runs last: every `everyMs` a statement on its connection, which must be
 * answered within `timeoutMs`, else its locks are taken for lost. Without it, a connection that
 * went silent under a run that sends nothing on it (a network partition: the server ends the
 * session after its keepalives, and another instance takes the locks) would be noticed only when
 * the socket says so, which after a partition that healed is never. A connection that broke
 * under the check tells so itself (onLost); one the server answered with an error is alive.
 */
function watch(session: LockSession, connection: ReservedConnection, everyMs: number, timeoutMs: number): void {
  if (session.ended || session.lost) return;
  session.nextCheck = setTimeout(() => {
    session.nextCheck = null;
    if (session.ended || session.lost) return;
    session.checking = answersWithin(connection, timeoutMs).then((answered) => {
      session.checking = null;
      if (!answered) session.lost = true;
      watch(session, connection, everyMs, timeoutMs);
    });
  }, everyMs);
  session.nextCheck.unref();
}

/** Whether a cheap statement on `connection` settles within `timeoutMs` (answered, or failed and told). */
async function answersWithin(connection: ReservedConnection, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
    timer.unref();
  });
  const settled = connection.query('SELECT 1', []).then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function tryLock(connection: ReservedConnection, name: string): Promise<boolean> {
  const rows = await connection.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS locked', [
    LOCK_NAMESPACE,
    name,
  ]);
  return rows[0]?.locked === true;
}

/**
 * Waits until no other transaction holds `name`, and holds it until this transaction ends
 * (PostgreSQL; SQLite's write transactions run one at a time anyway). Call inside a transaction.
 */
export async function lockForTransaction(db: Db, name: string): Promise<void> {
  if (isPostgres(db)) await sql`SELECT pg_advisory_xact_lock(${LOCK_NAMESPACE}, hashtext(${name}))`.execute(db);
}
