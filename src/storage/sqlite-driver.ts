// The driver between Kysely and the portal's one SQLite connection, with group commit. A
// commit writes every page its transaction changed to the WAL, one system call per page: for a
// create (user, address pool, change counter, configuration, audit row, listing counter) that
// is most of its time in the database. A finished write transaction is therefore folded into
// one open SQLite transaction (each runs in a savepoint of it) and committed with the others
// that finish in the same turn of the event loop, up to MAX_GROUP, so the pages they share are
// written once. Under load the requests of one turn share a commit; alone, a transaction waits
// for the end of its turn only. What a caller sees does not change:
//  - nobody's transaction resolves before the commit that made its change durable, and a
//    failed commit fails every transaction it held;
//  - a transaction that fails rolls back its own savepoint only, and fails only after the
//    commit of those folded in before it (what it read), with that commit's error if it failed;
//  - a query outside a transaction and a read-only transaction first commit an open group,
//    so nothing is ever read that is not durable.
// The connection is held while a transaction waits for its approval listeners (a connect
// script): transactions folded in before it then wait for it too.
//
// Also, unlike Kysely's own SQLite driver:
//  - Write transactions start with BEGIN IMMEDIATE, which takes the write lock at once. A plain
//    (deferred) BEGIN takes it at the first write, after the first read; SQLite then does not
//    wait for another process's lock at all (waiting there could deadlock) and fails with
//    SQLITE_BUSY at once, so the busy timeout would never apply.
//  - No ROLLBACK after SQLite rolled back by itself. After some failures (SQLITE_FULL,
//    SQLITE_IOERR, SQLITE_NOMEM, some SQLITE_BUSY) SQLite ends the transaction; a ROLLBACK then
//    fails with "cannot rollback - no transaction is active", and that error would replace the
//    one that says what happened. The driver asks the connection (`inTransaction`, SQLite's
//    autocommit flag) instead of guessing from error codes.
//  - Prepared statements are kept per SQL text: the portal runs the same few dozen statements
//    all the time, and better-sqlite3 statements are reusable.
import type SqliteDatabase from 'better-sqlite3';
import {
  SelectQueryNode,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/** Transactions one commit may hold: bounds how long the first of them waits for its answer. */
const MAX_GROUP = 32;
/**
 * Queries built with IN (...) lists vary in length, so the statement cache is bounded: when full,
 * it starts over, and the statements in use are kept again from their next run on. (Kept full,
 * it would prepare on every run each statement first used after it filled, for good.)
 */
const MAX_CACHED_STATEMENTS = 1000;

/** What the holder of the connection is in. */
type Holder = 'no-transaction' | 'grouped-transaction' | 'read-only-transaction';

interface Member {
  resolve(): void;
  reject(error: unknown): void;
}

export class GroupCommitSqliteDriver implements Driver {
  readonly #sqlite: SqliteDatabase.Database;
  readonly #statements = new Map<string, SqliteDatabase.Statement>();
  readonly #connection: DatabaseConnection;
  #locked = false;
  readonly #waiting: (() => void)[] = [];
  #holder: Holder = 'no-transaction';
  /** The transactions folded into the open SQLite transaction; null: none is open. */
  #group: Member[] | null = null;
  /** The commit the holder's finished transaction waits for, awaited once it let go of the connection. */
  #durable: Promise<void> | null = null;
  /** A commit of the open group is due (its turn ended) and waits for the holder's transaction. */
  #commitDue = false;
  #commitScheduled = false;
  /** The last statement's failure: what a group that SQLite ended by itself is failed with. */
  #lastFailure: unknown = null;

  constructor(sqlite: SqliteDatabase.Database) {
    this.#sqlite = sqlite;
    this.#connection = {
      executeQuery: (query) => this.#executeQuery(query),
      streamQuery: (query) => this.#streamQuery(query),
    };
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#locked) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#locked = true;
    return this.#connection;
  }

  async releaseConnection(): Promise<void> {
    const durable = this.#durable;
    this.#durable = null;
    // The connection passes straight to the next waiter (if any), so `#locked` stays set.
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else {
      this.#locked = false;
      // The end of the turn came while the connection was held, and no transaction followed to commit.
      if (this.#commitDue) this.#commitQuietly();
    }
    // After letting go: the commit this transaction waits for is made by a later holder.
    if (durable !== null) await durable;
  }

  async beginTransaction(_connection: DatabaseConnection, settings?: TransactionSettings): Promise<void> {
    if (settings?.accessMode === 'read only') {
      this.#commitOpenGroup();
      this.#run('begin');
      this.#holder = 'read-only-transaction';
      return;
    }
    this.#lastFailure = null;
    if (this.#group === null) {
      this.#run('begin immediate');
      this.#group = [];
    }
    this.#run('savepoint grouped_transaction');
    this.#holder = 'grouped-transaction';
  }

  async commitTransaction(): Promise<void> {
    if (this.#holder === 'read-only-transaction') {
      this.#run('commit');
      this.#holder = 'no-transaction';
      return;
    }
    this.#run('release grouped_transaction');
    this.#holder = 'no-transaction';
    const group = this.#group ?? [];
    if (this.#commitDue || group.length + 1 >= MAX_GROUP) {
      this.#commitOpenGroup();
      return;
    }
    const durable = new Promise<void>((resolve, reject) => group.push({ resolve, reject }));
    // Awaited in releaseConnection; this keeps a failure before then from counting as unhandled.
    durable.catch(() => {});
    this.#durable = durable;
    this.#scheduleCommit();
  }

  /** At the end of this turn of the event loop: commit the group, or have its next transaction commit it. */
  #scheduleCommit(): void {
    if (this.#commitScheduled) return;
    this.#commitScheduled = true;
    setImmediate(() => {
      this.#commitScheduled = false;
      if (this.#group === null) return;
      if (this.#locked) this.#commitDue = true;
      else this.#commitQuietly();
    });
  }

  /** Commits the open group for its transactions, which get the outcome; nobody else waits for it. */
  #commitQuietly(): void {
    try {
      this.#commitOpenGroup();
    } catch {
      // Every transaction of the group was failed with the error.
    }
  }

  async rollbackTransaction(): Promise<void> {
    const holder = this.#holder;
    this.#holder = 'no-transaction';
    if (holder === 'no-transaction') return; // a failed commit: the group is rolled back already
    if (!this.#sqlite.inTransaction) {
      // SQLite ended the whole transaction by itself: the transactions folded in are gone too.
      this.#failGroup(this.#lastFailure ?? new Error('SQLite rolled back the transaction'));
      return;
    }
    if (holder === 'read-only-transaction') {
      this.#run('rollback');
      return;
    }
    this.#run('rollback to grouped_transaction');
    this.#run('release grouped_transaction');
    const group = this.#group;
    if (group === null || group.length === 0) {
      this.#commitQuietly();
      return;
    }
    // What it read may have been written by the transactions folded in before it: its failure
    // (a refusal over a user just disabled, say) answers only once their commit made that
    // durable, and gives way to the commit's error if it did not.
    const durable = new Promise<void>((resolve, reject) => group.push({ resolve, reject }));
    durable.catch(() => {});
    this.#durable = durable;
    if (this.#commitDue || group.length >= MAX_GROUP) this.#commitQuietly();
    else this.#scheduleCommit();
  }

  async destroy(): Promise<void> {
    try {
      // A transaction still running (a caller that did not wait for its own before closing) is
      // rolled back, never committed half-done with the group; its next statement fails.
      if (this.#holder === 'grouped-transaction' && this.#sqlite.inTransaction) {
        this.#run('rollback to grouped_transaction');
        this.#run('release grouped_transaction');
      } else if (this.#holder === 'read-only-transaction' && this.#sqlite.inTransaction) {
        this.#run('rollback');
      }
      this.#holder = 'no-transaction';
      this.#commitOpenGroup();
    } finally {
      this.#sqlite.close();
    }
  }

  /** Commits the open group, if any; when the commit fails, every transaction in it fails (the caller's too). */
  #commitOpenGroup(): void {
    const members = this.#group;
    this.#commitDue = false;
    if (members === null) return;
    try {
      this.#run('commit');
    } catch (error) {
      if (this.#sqlite.inTransaction) this.#run('rollback');
      this.#failGroup(error);
      throw error;
    }
    this.#group = null;
    for (const member of members) member.resolve();
  }

  #failGroup(error: unknown): void {
    const members = this.#group ?? [];
    this.#group = null;
    this.#commitDue = false;
    for (const member of members) member.reject(error);
  }

  #run(sql: string): void {
    this.#statement(sql).run();
  }

  #statement(sql: string): SqliteDatabase.Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#sqlite.prepare(sql);
      if (this.#statements.size >= MAX_CACHED_STATEMENTS) this.#statements.clear();
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  async #executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    // Outside a transaction a query reads only what is durable.
    if (this.#holder === 'no-transaction') this.#commitOpenGroup();
    try {
      const statement = this.#statement(query.sql);
      const parameters = query.parameters as unknown[];
      if (statement.reader) return { rows: statement.all(parameters) as R[] };
      const { changes, lastInsertRowid } = statement.run(parameters);
      return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
    } catch (error) {
      this.#lastFailure = error;
      throw error;
    }
  }

  async *#streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('SQLite streams select queries only');
    if (this.#holder === 'no-transaction') this.#commitOpenGroup();
    for (const row of this.#statement(query.sql).iterate(query.parameters as unknown[])) yield { rows: [row as R] };
  }
}
