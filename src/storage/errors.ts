// Recognises storage failures across drivers: constraint violations, so callers can retry instead
// of failing, and outages (busy, unreachable, full, read-only), which callers answer with "try again later".

export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  // better-sqlite3: SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY; PostgreSQL: 23505.
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/**
 * A write that lost a race with another transaction — typically on another portal instance
 * sharing the PostgreSQL database — and succeeds when the whole transaction is tried again:
 * a unique or foreign key violation (the row it counted on was just taken or deleted), a
 * deadlock, or a serialization failure.
 */
export function isWriteConflict(error: unknown): boolean {
  if (isUniqueViolation(error) || isRolledBackForConflict(error)) return true;
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503';
}

/**
 * PostgreSQL rolled the transaction back to end a conflict with another one: 40P01
 * deadlock_detected (two transactions each waiting for a row the other locked: one is chosen
 * and undone) or 40001 serialization_failure. Nothing of it was kept, and whatever it was meant
 * to do succeeds when it is run again whole, once the other transaction is done.
 */
export function isRolledBackForConflict(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return code === '40P01' || code === '40001';
}

/**
 * The database did not answer: no connection or no answer to a statement within the database
 * timeout, or the connection broke. The driver's own error (which carries no code) is the cause.
 */
export class DatabaseUnreachable extends Error {
  override readonly name: string = 'DatabaseUnreachable';
  readonly code = 'DATABASE_UNREACHABLE';

  constructor(cause: Error) {
    super(`database unreachable: ${cause.message}`, { cause });
  }
}

/**
 * A statement sent to PostgreSQL got no answer within the database timeout (pg's `query_timeout`):
 * the server is stopped, unreachable or stuck, or a commit waits on a slow disk or standby. The
 * connection is closed; what the statement did on the server is unknown.
 */
export class NoAnswerInTime extends DatabaseUnreachable {
  override readonly name = 'NoAnswerInTime';
}

/**
 * The connection to PostgreSQL broke while a statement was on it ("Connection terminated
 * unexpectedly": a restart, a failover, a proxy or network that dropped it), or the statement
 * was sent on a connection that had already broken. The driver's own error is the cause.
 */
export class ConnectionLost extends Error {
  override readonly name = 'ConnectionLost';
  readonly code = 'CONNECTION_LOST';

  constructor(cause: Error) {
    super(`database connection lost: ${cause.message}`, { cause });
  }
}

/**
 * No answer came to a transaction's COMMIT (or to a change's one statement): the connection broke
 * or the answer did not come in time. The transaction may have committed or not; only reading
 * back what it wrote tells (src/storage/change-markers.ts). The cause is the connection's failure.
 */
export class CommitOutcomeUnknown extends Error {
  override readonly name = 'CommitOutcomeUnknown';
  readonly code = 'COMMIT_OUTCOME_UNKNOWN';

  constructor(cause: Error) {
    super(`no answer to COMMIT: ${cause.message}`, { cause });
  }
}

/**
 * The failure proves the connection to the server was lost (or could not be had because the
 * server is restarting), not that the server refused the work: the network errors of a dropped
 * or refused connection, PostgreSQL's 57P01 admin_shutdown, 57P02 crash_shutdown and 57P03
 * cannot_connect_now, class 08 connection exceptions, and a connection that broke under a
 * statement. A transaction that failed so before its COMMIT was sent did not commit and may be
 * run again on a fresh connection. Never a constraint, a lock timeout or a statement timeout
 * (a server that does not answer at all is not waited for twice).
 */
export function isConnectionLost(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && CONNECTION_LOST.test(code);
}

const CONNECTION_LOST = /^(ECONNRESET|ECONNREFUSED|EPIPE|CONNECTION_LOST|57P0[123]|08\d\d\d)$/;

/**
 * Whether a statement that failed so may still have run, and committed: its connection broke,
 * or its answer did not come in time, with no answer from the server. One the server answered
 * with an error (a stale prepared statement, a shutdown notice: an error message of the
 * server's, with its severity, on the error or its cause) did not commit.
 */
export function mayHaveCommitted(error: unknown): boolean {
  if (error instanceof NoAnswerInTime) return true;
  if (!isConnectionLost(error)) return false;
  return !answeredByServer(error) && !answeredByServer((error as { cause?: unknown }).cause);
}

/** An error message the server sent (pg's DatabaseError carries its severity: ERROR, FATAL…). */
function answeredByServer(error: unknown): boolean {
  return typeof error === 'object' && error !== null && typeof (error as { severity?: unknown }).severity === 'string';
}

/**
 * Why a storage failure means "try again later" rather than "the request was wrong", or null
 * when it is not such a failure: the disk is full, the database cannot be written, or the
 * database is busy, unreachable or shutting down.
 */
export type StorageOutage = 'full' | 'read-only' | 'unavailable';

// SQLite (better-sqlite3's extended codes) and PostgreSQL SQLSTATEs:
// 53100 disk_full; 25006 read_only_sql_transaction (a standby after a failover, a read-only database).
const FULL = /^(SQLITE_FULL|53100)$/;
const READ_ONLY = /^(SQLITE_READONLY(_\w+)?|25006)$/;
// 55P03 lock_not_available (lock_timeout), 57014 query_canceled (statement_timeout), 57P01-57P03
// shutdown, crash / cannot connect now, 25P03 idle_in_transaction_session_timeout, class 53 insufficient
// resources (too many connections, out of memory), class 08 connection exceptions; the network
// errors of opening a connection.
const UNAVAILABLE =
  /^(SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN)(_\w+)?|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|DATABASE_UNREACHABLE|CONNECTION_LOST|COMMIT_OUTCOME_UNKNOWN|55P03|57014|57P0[123]|25P03|53\d\d\d|08\d\d\d)$/;

export function storageOutage(error: unknown): StorageOutage | null {
  if (typeof error !== 'object' || error === null) return null;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return null;
  if (FULL.test(code)) return 'full';
  if (READ_ONLY.test(code)) return 'read-only';
  if (UNAVAILABLE.test(code)) return 'unavailable';
  return null;
}
