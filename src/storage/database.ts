// Opens the database and brings its schema up to date. SQLite (the embedded default) runs
// in WAL mode with foreign keys on; PostgreSQL goes through a `pg` connection pool and can be
// shared by several portal instances. Both run the same Kysely migrations, applied at start
// under Kysely's migration lock (on PostgreSQL a session advisory lock), so instances that
// start together apply each migration once. Every wait for the database is bounded (the
// portal's `databaseTimeout`), and a failed transaction reports why it failed, not why its
// ROLLBACK did. A PostgreSQL restart or a dropped connection costs no call: for up to
// `retryForMs` per outage (src/storage/outage-window.ts) a connection is asked for again while
// the server refuses it, and a read outside a transaction is asked again on a fresh connection
// (transactions are run again by the events seam, src/core/events.ts, which can tell what they
// wrote: src/storage/change-markers.ts).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  Kysely,
  Migrator,
  PostgresAdapter,
  PostgresDialect,
  PostgresDriver,
  SqliteAdapter,
  SqliteDialect,
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type TransactionSettings,
  type Migration,
  type MigrationProvider,
  type PostgresCursor,
  type PostgresPool,
  type PostgresPoolClient,
  type PostgresQueryResult,
} from 'kysely';
import pg from 'pg';
import { GroupCommitSqliteDriver } from './sqlite-driver.js';
import type { DatabaseLocation } from '../config/portal-config.js';
import { describeDatabase } from '../config/database-location.js';
import {
  CommitOutcomeUnknown,
  ConnectionLost,
  DatabaseUnreachable,
  isConnectionLost,
  NoAnswerInTime,
} from './errors.js';
import { createPrivateFile, ensurePrivateFile } from './private-files.js';
import { OutageWindow } from './outage-window.js';
import { closedForStaleStatement, isStalePreparedStatement, StatementNames } from './statement-names.js';
import { initialSchema } from './migrations/0001-initial.js';
import { listingOrder } from './migrations/0002-listing-order.js';
import { openVpnSchema } from './migrations/0003-openvpn.js';
import { revisionsSchema } from './migrations/0004-revisions.js';
import { sessionsSchema } from './migrations/0005-sessions.js';
import { adminKeysSchema } from './migrations/0006-admin-keys.js';
import { webhooksSchema } from './migrations/0007-webhooks.js';
import { deviceKeysSchema } from './migrations/0008-device-keys.js';
import { enrollmentTokensSchema } from './migrations/0009-enrollment-tokens.js';
import { listingGenerationSchema } from './migrations/0010-listing-generation.js';
import { adminKeyLineageSchema } from './migrations/0011-admin-key-lineage.js';
import { auditRefusalsSchema } from './migrations/0012-audit-refusals.js';
import { revocationsSchema } from './migrations/0013-revocations.js';
import { devicesSchema } from './migrations/0014-devices.js';
import { connectionLogSearchSchema } from './migrations/0015-connection-log-search.js';
import { consoleSessionsSchema } from './migrations/0017-console-sessions.js';
import { consoleOidcSessionsSchema } from './migrations/0019-console-oidc-sessions.js';
import { listingChangesSchema } from './migrations/0020-listing-changes.js';
import { revocationListTrustSchema } from './migrations/0021-revocation-list-trust.js';
import { changeMarkersSchema } from './migrations/0022-change-markers.js';
import { radiusAccountingSchema } from './migrations/0023-radius-accounting.js';
import { legalHoldsSchema } from './migrations/0024-legal-holds.js';
import { natMappingsSchema } from './migrations/0025-nat-mappings.js';
import { deviceSuspensionSchema } from './migrations/0026-device-suspension.js';
import { scimSchema } from './migrations/0027-scim.js';
import { deviceSearchIndexes } from './migrations/0030-device-search.js';
import { connectionLogPagingIndexes } from './migrations/0031-connection-log-paging.js';
import { wantedPeersIndexes } from './migrations/0032-wanted-peers.js';
import { statementGiveUpFunction } from './migrations/0033-statement-give-up.js';
import { changeMarkerTombstones } from './migrations/0034-change-marker-tombstones.js';
import { importedRecordsSchema } from './migrations/0035-imported-records.js';
import { userDisabledBy } from './migrations/0036-user-disabled-by.js';
import { importedAuthorizations } from './migrations/0037-imported-authorizations.js';
import { natDatesSettled } from './migrations/0038-nat-dates-settled.js';
import { keptAnswerConfiguration } from './migrations/0039-kept-answer-configuration.js';
import { scimProfileChecks } from './migrations/0040-scim-profile-checks.js';
import { keptAnswerHandOuts } from './migrations/0041-kept-answer-hand-outs.js';
import { unlinkedKeptAnswers } from './migrations/0042-unlinked-kept-answers.js';
import { destroyedUsersSchema } from './migrations/0043-destroyed-users.js';
import { withheldImports } from './migrations/0044-withheld-imports.js';
import { usersDisabledByImport } from './migrations/0045-users-disabled-by-import.js';
import { mdmInventoryMisses } from './migrations/0046-mdm-inventory-misses.js';
import { revocationListSources } from './migrations/0047-revocation-list-sources.js';
import { deviceCertificateIssuer } from './migrations/0048-device-certificate-issuer.js';
import { radiusOutboxEventAt } from './migrations/0049-radius-outbox-event-at.js';
import { consoleSecretSessionsKeyed } from './migrations/0050-console-secret-sessions-keyed.js';
import { webhookReceiverRests } from './migrations/0051-webhook-receiver-rests.js';
import { openSessionsByNode } from './migrations/0052-open-sessions-by-node.js';
import { sessionsByNodeStart } from './migrations/0053-sessions-by-node-start.js';
import { liveDeviceCertificates } from './migrations/0054-live-device-certificates.js';
import { unmappedClientAddresses } from './migrations/0055-unmapped-client-addresses.js';
import { deviceOtherSuspensions } from './migrations/0056-device-other-suspensions.js';
import { scimUserNameKeys } from './migrations/0057-scim-user-name-key.js';
import { deviceJamfEventAt } from './migrations/0058-device-jamf-event-at.js';
import { consoleOidcSessionRules } from './migrations/0059-console-oidc-session-rules.js';
import { radiusOutboxAddress } from './migrations/0060-radius-outbox-address.js';
import { scimDirectoryActive } from './migrations/0061-scim-directory-active.js';
import { scimGroupNameKeys } from './migrations/0062-scim-group-name-key.js';
import { liveDeviceIdentifiersAnyCase } from './migrations/0063-live-device-identifiers-any-case.js';
import { deviceHistoryProfile } from './migrations/0064-device-history-profile.js';
import { destroyedUserNameKeys } from './migrations/0066-destroyed-user-name-keys.js';
import type { Database } from './schema.js';

/** The database or a transaction on it (a Transaction is a Kysely): what a query runs on. */
export type Db = Kysely<Database>;

/** Connections per portal instance unless `poolSize` says otherwise; PostgreSQL's default max_connections (100) holds several instances. */
const DEFAULT_POSTGRES_POOL_SIZE = 10;
/** The `db` commands' wait; the portal's is its `databaseTimeout` option (default PT5S as well). */
const DEFAULT_DATABASE_TIMEOUT_MS = 5000;
/** How long a lost connection is made good by default (the portal's `databaseRetryFor`). */
const DEFAULT_RETRY_FOR_MS = 5000;
/** The first pause before asking again for a lost connection; doubled up to the next. */
const FIRST_RETRY_PAUSE_MS = 50;
const LONGEST_RETRY_PAUSE_MS = 500;
/** TCP keep-alive probes start after this long idle, so a pooled connection to a vanished host is noticed. */
const POSTGRES_KEEPALIVE_DELAY_MS = 10_000;

const migrations: Record<string, Migration> = {
  '0001-initial': initialSchema,
  '0002-listing-order': listingOrder,
  '0003-openvpn': openVpnSchema,
  '0004-revisions': revisionsSchema,
  '0005-sessions': sessionsSchema,
  '0006-admin-keys': adminKeysSchema,
  '0007-webhooks': webhooksSchema,
  '0008-device-keys': deviceKeysSchema,
  '0009-enrollment-tokens': enrollmentTokensSchema,
  '0010-listing-generation': listingGenerationSchema,
  '0011-admin-key-lineage': adminKeyLineageSchema,
  '0012-audit-refusals': auditRefusalsSchema,
  '0013-revocations': revocationsSchema,
  '0014-devices': devicesSchema,
  '0015-connection-log-search': connectionLogSearchSchema,
  '0017-console-sessions': consoleSessionsSchema,
  '0019-console-oidc-sessions': consoleOidcSessionsSchema,
  '0020-listing-changes': listingChangesSchema,
  '0021-revocation-list-trust': revocationListTrustSchema,
  '0022-change-markers': changeMarkersSchema,
  '0023-radius-accounting': radiusAccountingSchema,
  '0024-legal-holds': legalHoldsSchema,
  '0025-nat-mappings': natMappingsSchema,
  '0026-device-suspension': deviceSuspensionSchema,
  '0027-scim': scimSchema,
  '0030-device-search': deviceSearchIndexes,
  '0031-connection-log-paging': connectionLogPagingIndexes,
  '0032-wanted-peers': wantedPeersIndexes,
  '0033-statement-give-up': statementGiveUpFunction,
  '0034-change-marker-tombstones': changeMarkerTombstones,
  '0035-imported-records': importedRecordsSchema,
  '0036-user-disabled-by': userDisabledBy,
  '0037-imported-authorizations': importedAuthorizations,
  '0038-nat-dates-settled': natDatesSettled,
  '0039-kept-answer-configuration': keptAnswerConfiguration,
  '0040-scim-profile-checks': scimProfileChecks,
  '0041-kept-answer-hand-outs': keptAnswerHandOuts,
  '0042-unlinked-kept-answers': unlinkedKeptAnswers,
  '0043-destroyed-users': destroyedUsersSchema,
  '0044-withheld-imports': withheldImports,
  '0045-users-disabled-by-import': usersDisabledByImport,
  '0046-mdm-inventory-misses': mdmInventoryMisses,
  '0047-revocation-list-sources': revocationListSources,
  '0048-device-certificate-issuer': deviceCertificateIssuer,
  '0049-radius-outbox-event-at': radiusOutboxEventAt,
  '0050-console-secret-sessions-keyed': consoleSecretSessionsKeyed,
  '0051-webhook-receiver-rests': webhookReceiverRests,
  '0052-open-sessions-by-node': openSessionsByNode,
  '0053-sessions-by-node-start': sessionsByNodeStart,
  '0054-live-device-certificates': liveDeviceCertificates,
  '0055-unmapped-client-addresses': unmappedClientAddresses,
  '0056-device-other-suspensions': deviceOtherSuspensions,
  '0057-scim-user-name-key': scimUserNameKeys,
  '0058-device-jamf-event-at': deviceJamfEventAt,
  '0059-console-oidc-session-rules': consoleOidcSessionRules,
  '0060-radius-outbox-address': radiusOutboxAddress,
  '0061-scim-directory-active': scimDirectoryActive,
  '0062-scim-group-name-key': scimGroupNameKeys,
  '0063-live-device-identifiers-any-case': liveDeviceIdentifiersAnyCase,
  '0064-device-history-profile': deviceHistoryProfile,
  '0066-destroyed-user-name-keys': destroyedUserNameKeys,
};

const migrationProvider: MigrationProvider = { getMigrations: async () => migrations };

export interface OpenDatabaseOptions {
  /** PostgreSQL connections kept at most (the portal's `databasePoolSize`); default 10. */
  readonly poolSize?: number;
  /** Where failures of pooled connections are reported (PostgreSQL): a server restart, a failover, a broken network. */
  readonly onConnectionError?: (error: Error) => void;
  /**
   * The longest wait for the database, in milliseconds: for a connection (PostgreSQL) and for a
   * lock another process or session holds (SQLite's busy timeout, PostgreSQL's lock_timeout;
   * `?lock_timeout=MS` in a PostgreSQL URL overrides it). Default 5 s.
   */
  readonly timeoutMs?: number;
  /**
   * Whether every PostgreSQL statement is limited to `timeoutMs` too: on the server
   * (statement_timeout, idle_in_transaction_session_timeout) and in the portal, which gives up
   * on a server that does not answer at all (stopped, frozen, unreachable). For the serving
   * portal; migrations and `db copy` may legitimately run longer statements. SQLite statements
   * run in the portal's own process and have no such limit.
   */
  readonly limitStatements?: boolean;
  /**
   * PostgreSQL: how long a lost connection is made good, in milliseconds (the portal's
   * `databaseRetryFor`; default 5 s, 0: never). Opening a connection the server refuses while
   * it restarts is tried again, and so is a read outside a transaction whose connection broke;
   * `transactionRetryWindow` tells the events seam, which runs transactions again.
   */
  readonly retryForMs?: number;
  /**
   * PostgreSQL: whether statements run again and again are prepared on each connection
   * (src/storage/statement-names.ts; the portal's `databasePreparedStatements`). Default off:
   * migrations and `db copy` run each statement once.
   */
  readonly preparedStatements?: boolean;
}

/**
 * Each PostgreSQL database's pool, for the connections held apart for session state
 * (`reserveConnection`): by its adapter, which the handles `withPlugin` and `connection()` make share.
 */
const closingPools = new WeakMap<object, ClosingPool>();

/**
 * A PostgreSQL connection of the pool held apart for state that lives as long as its session
 * (advisory locks), raw SQL only: never asked again on another connection.
 */
export interface ReservedConnection {
  query<R>(text: string, values: readonly unknown[]): Promise<R[]>;
  /**
   * Calls `listener` once when the connection ends or breaks before it is given back (the server
   * dropped its session state), or a statement on it leaves it unusable (it broke under the
   * statement, or no answer came in time: the server may have ended the session meanwhile). Told
   * before that statement's failure is thrown. A statement the server refused with an error (the
   * connection is fine) is not a loss.
   */
  onLost(listener: (error: Error) => void): void;
  /** Gives it back to the pool; `destroy`: closes it instead, ending its session and all it holds. */
  release(destroy: boolean): void;
}

/** Takes a connection of `db`'s pool (PostgreSQL) until `release()`. */
export async function reserveConnection(db: Db): Promise<ReservedConnection> {
  const pool = closingPools.get(db.getExecutor().adapter);
  if (pool === undefined) throw new Error('only a PostgreSQL database has connections to reserve');
  return (await pool.connect()).reserve();
}

/**
 * How long each PostgreSQL database made good lost connections (see `transactionRetryWindow`),
 * by its adapter, which the handles `withPlugin` makes share.
 */
const retryWindows = new WeakMap<object, number>();

/**
 * How long a transaction on `db` whose connection was lost may be run again, in milliseconds:
 * `retryForMs` on PostgreSQL, 0 on SQLite (the database is in the portal's own process: no
 * connection to lose).
 */
export function transactionRetryWindow(db: Db): number {
  return retryWindows.get(db.getExecutor().adapter) ?? 0;
}

/** Connects and applies pending migrations. */
export async function openDatabase(location: DatabaseLocation, options: OpenDatabaseOptions = {}): Promise<Db> {
  // Migrations run on a connection without the statement limit: building an index on a large
  // table may take longer than a call may wait.
  const migrating = connectDatabase(location, { ...options, limitStatements: false, preparedStatements: false });
  try {
    await migrateToLatest(migrating);
  } catch (error) {
    await migrating.destroy();
    // One line for the operator: which database, which migration, what the driver said.
    if (error instanceof MigrationFailed)
      throw new DatabaseOpenFailed(`database ${describeDatabase(location)}: ${error.message}`, error.code);
    throw error;
  }
  if (options.limitStatements !== true) return migrating;
  await migrating.destroy();
  const db = connectDatabase(location, options);
  // Kysely closes only a driver it has used, and the SQLite file is open already: use it now, so
  // that destroy() closes the file even when no query ran (a portal whose start failed).
  if (location.dialect === 'sqlite') await db.connection().execute(async () => {});
  return db;
}

/** Connects without touching the schema (`vpn-portal db status`). */
export function connectDatabase(location: DatabaseLocation, options: OpenDatabaseOptions = {}): Db {
  const timeoutMs = options.timeoutMs ?? DEFAULT_DATABASE_TIMEOUT_MS;
  if (location.dialect === 'postgres') {
    const statementLimits =
      options.limitStatements === true
        ? { statement_timeout: timeoutMs, idle_in_transaction_session_timeout: timeoutMs, query_timeout: timeoutMs }
        : {};
    // Parameters in the URL win over these (pg gives the connection string precedence).
    const pool = new pg.Pool({
      connectionString: location.url,
      max: options.poolSize ?? DEFAULT_POSTGRES_POOL_SIZE,
      // Bounds both opening a connection and waiting for a pooled one while all are busy.
      connectionTimeoutMillis: timeoutMs,
      lock_timeout: timeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: POSTGRES_KEEPALIVE_DELAY_MS,
      ...statementLimits,
    });
    // A connection the server closes (restart, failover) must not crash the portal, also while
    // it is checked out between two queries (the pool only listens while it is idle): the
    // query on it fails, the pool drops it, and the next query opens a new one.
    const report = options.onConnectionError ?? (() => {});
    pool.on('connect', (client) => client.on('error', report));
    pool.on('error', () => {}); // the same error, already reported by the client's listener
    const retryForMs = options.retryForMs ?? DEFAULT_RETRY_FOR_MS;
    const closingPool = new ClosingPool(
      pool,
      retryForMs,
      options.preparedStatements === true ? new StatementNames() : null,
    );
    const db = new Kysely<Database>({ dialect: new RetryingPostgresDialect({ pool: closingPool }, retryForMs) });
    retryWindows.set(db.getExecutor().adapter, retryForMs);
    closingPools.set(db.getExecutor().adapter, closingPool);
    return db;
  }
  // User ids, public keys and addresses: the files are the portal user's alone (0600), a new
  // database from the start, an existing one (and its -wal and -shm, which SQLite gives the mode
  // of the database file) once SQLite has read it. An existing folder is left as it is: it may
  // be shared (the portal makes its dataDir 0700 itself).
  mkdirSync(path.dirname(location.path), { recursive: true, mode: 0o700 });
  createPrivateFile(location.path);
  const sqlite = new SqliteDatabase(location.path);
  try {
    // Waiting for another process's write lock blocks this process: better-sqlite3 is synchronous.
    sqlite.pragma(`busy_timeout = ${Math.round(timeoutMs)}`);
    // Reads the file: one that is no SQLite database (a configuration file named by mistake) is
    // refused here, before its mode is changed, so the owner's other users can still read it.
    sqlite.pragma('journal_mode = WAL');
    for (const file of [location.path, `${location.path}-wal`, `${location.path}-shm`, `${location.path}-journal`]) {
      ensurePrivateFile(file, { create: false });
    }
  } catch (error) {
    sqlite.close();
    throw error;
  }
  // NORMAL is durable across application crashes in WAL mode; only a power loss can drop the last commits.
  sqlite.pragma('synchronous = NORMAL');
  // Each transaction of a group commit runs in a savepoint, whose journal holds every page it
  // changes. SQLite keeps that journal in memory up to 64 KiB, then writes it to a temporary
  // file, page by page, until the group commits: a create changes about sixteen pages, so its
  // pages were written twice. In memory, a create's writes cost 40 % less CPU (bench/README.md).
  // The temporary tables and indexes a query builds for itself are held in memory too.
  sqlite.pragma('temp_store = MEMORY');
  sqlite.pragma('foreign_keys = ON');
  return new Kysely<Database>({ dialect: new EmbeddedSqliteDialect(sqlite) });
}

/** True when `db` talks to PostgreSQL (for the few queries that differ between dialects). */
export function isPostgres(db: Db | Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/** Kysely's SQLite dialect on the portal's own driver (src/storage/sqlite-driver.ts). */
class EmbeddedSqliteDialect extends SqliteDialect {
  constructor(private readonly sqlite: SqliteDatabase.Database) {
    super({ database: sqlite });
  }

  override createDriver(): Driver {
    return new GroupCommitSqliteDriver(this.sqlite);
  }

  override createAdapter(): SqliteAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

/**
 * SQLite changes its schema inside a transaction as PostgreSQL does, but Kysely's adapter says it
 * cannot, so its migrator would run each statement on its own: a migration that failed half-way
 * (a full disk, a process killed during an upgrade) kept its first statements, and every later
 * start failed on them ("duplicate column name"). Pending migrations run in one transaction.
 */
class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/**
 * The pool Kysely draws PostgreSQL connections from. A statement that got no answer (the
 * server is stopped or unreachable: `query_timeout`, or the connection broke) leaves its
 * connection in an unknown state, perhaps still waiting for that answer. Such a connection is
 * never used again: every later statement on it fails at once with the same error — so
 * Kysely's ROLLBACK neither waits a second time nor replaces the cause — and release() closes
 * it (pg's `release(error)`), which ends its transaction on the server. pg's own failures carry
 * no code; they become `DatabaseUnreachable`, which callers answer with "try again later".
 */
class ClosingPool implements PostgresPool {
  constructor(
    private readonly pool: pg.Pool,
    private readonly retryForMs: number,
    /** null: every statement is sent unnamed. */
    private readonly names: StatementNames | null,
  ) {}

  /**
   * A server that refuses connections while it restarts (or drops them at once) is asked again
   * for up to `retryForMs` from its first refusal: time spent waiting for a pooled connection
   * behind a backlog does not count.
   */
  async connect(): Promise<ClosingClient> {
    const outage = new OutageWindow(this.retryForMs);
    for (let pause = FIRST_RETRY_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_RETRY_PAUSE_MS)) {
      try {
        return new ClosingClient(await this.pool.connect(), this.names);
      } catch (error) {
        const failure = withCode(error);
        if (!isConnectionLost(failure)) throw failure;
        outage.lost(false);
        if (!outage.allows(pause)) throw failure;
        await sleep(pause);
      }
    }
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}

/** Per connection, the generation of the first name it prepared (generations only grow: the oldest it holds). */
const oldestGenerationPrepared = new WeakMap<pg.PoolClient, number>();

class ClosingClient implements PostgresPoolClient {
  private failure: Error | null = null;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly names: StatementNames | null,
  ) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    statement: string | PostgresCursor<R>,
    parameters: ReadonlyArray<unknown> = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // Streaming needs `cursor` in the dialect's configuration, which the portal does not set.
    if (typeof statement !== 'string') throw new Error('cursors are not supported');
    return this.run<R>(statement, parameters);
  }

  release(): void {
    // pg closes a connection released with `true`, and with it every statement it prepared.
    this.client.release(this.failure ?? (this.holdsDroppedNames() || undefined));
  }

  /** This connection as a `ReservedConnection`: its end or failure is told, and it may be closed instead of given back. */
  reserve(): ReservedConnection {
    let released = false;
    const unwatch: (() => void)[] = [];
    const tellers: ((error: Error) => void)[] = [];
    // Its holders send statements whenever they need to (an instance's lock runs start and end
    // independently); the driver would queue one sent while another runs, but is to refuse it in
    // its next major version: they are sent one after the other here.
    let previous: Promise<unknown> = Promise.resolve();
    const run = async <R>(text: string, values: readonly unknown[]): Promise<R[]> => {
      try {
        return (await this.run<R>(text, values)).rows;
      } catch (error) {
        // The statement left the connection unusable (run() never sends on it again): as lost as a closed socket.
        const failure = this.failure;
        if (failure !== null) for (const tell of tellers) tell(failure);
        throw error;
      }
    };
    return {
      query: <R>(text: string, values: readonly unknown[]): Promise<R[]> => {
        const rows = previous.then(() => run<R>(text, values));
        previous = rows.catch(() => undefined);
        return rows;
      },
      onLost: (listener) => {
        let told = false;
        const tell = (error: Error): void => {
          if (released || told) return;
          told = true;
          listener(error);
        };
        const ended = (): void => tell(new ConnectionLost(new Error('Connection terminated unexpectedly')));
        tellers.push(tell);
        this.client.on('error', tell);
        this.client.on('end', ended);
        unwatch.push(() => {
          this.client.off('error', tell);
          this.client.off('end', ended);
        });
      },
      release: (destroy) => {
        if (released) return;
        released = true;
        for (const stop of unwatch) stop();
        if (destroy) this.failure ??= new ConnectionLost(new Error('closed: its session state is unknown'));
        this.release();
      },
    };
  }

  /** Whether this connection prepared names of a generation the pool's names have left behind. */
  private holdsDroppedNames(): boolean {
    const oldest = oldestGenerationPrepared.get(this.client);
    return oldest !== undefined && this.names !== null && oldest < this.names.generation;
  }

  private async run<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    // Not sent: the transaction cannot commit, whatever it was asked.
    if (this.failure !== null) throw this.failure;
    // Statements without values (BEGIN, COMMIT) are cheap to parse and go by the simple protocol.
    const name = parameters.length === 0 ? undefined : this.names?.nameFor(sql);
    if (name !== undefined && this.names !== null && !oldestGenerationPrepared.has(this.client)) {
      oldestGenerationPrepared.set(this.client, this.names.generation);
    }
    try {
      const result =
        name === undefined
          ? await this.client.query(sql, [...parameters])
          : await this.client.query({ name, text: sql, values: [...parameters] });
      return {
        command: result.command as PostgresQueryResult<R>['command'],
        rowCount: result.rowCount ?? 0,
        rows: result.rows as R[],
      };
    } catch (error) {
      // A statement this connection prepared is stale (a migration changed its table) or gone:
      // the connection is closed, with every statement it prepared, and the call goes on as
      // after a lost connection (a read is asked again, a change run again on a fresh one).
      if (name !== undefined && error instanceof pg.DatabaseError && isStalePreparedStatement(error)) {
        this.failure = new ConnectionLost(error);
        throw this.failure;
      }
      // The server answered with an error (a constraint, a lock timeout): the connection is fine,
      // unless the error is the server ending the session (57P01 on a restart).
      if (error instanceof pg.DatabaseError && !isConnectionLost(error)) throw error;
      // A COMMIT whose connection broke may have committed: Kysely's ROLLBACK after it fails
      // with the same error, so the events seam learns that only a read back can tell. One pg
      // never sent (the session had ended between two statements) did not: it runs again at once.
      const failure = withCode(error);
      this.failure = sql === 'commit' && !neverSent(error) ? new CommitOutcomeUnknown(failure) : failure;
      throw this.failure;
    }
  }
}

/**
 * pg refuses a statement, before sending anything, on a client whose connection already failed
 * or was closed: whatever the statement was, the server never saw it.
 */
function neverSent(error: unknown): boolean {
  return (
    error instanceof Error &&
    /^Client (has encountered a connection error|was closed) and is not queryable$/.test(error.message)
  );
}

/**
 * The error itself when it has a code (ECONNREFUSED, a SQLSTATE); `ConnectionLost` around pg's
 * "the connection broke" errors, which carry none, `NoAnswerInTime` around its `query_timeout`;
 * else `DatabaseUnreachable` around it.
 */
function withCode(error: unknown): Error {
  if (error instanceof Error && typeof (error as { code?: unknown }).code === 'string') return error;
  const cause = error instanceof Error ? error : new Error(String(error));
  // pg's words for a socket that closed under a query, or a query sent on a client that broke.
  if (/Connection terminated unexpectedly|connection error and is not queryable/i.test(cause.message))
    return new ConnectionLost(cause);
  if (/^Query read timeout$/.test(cause.message)) return new NoAnswerInTime(cause);
  return new DatabaseUnreachable(cause);
}

/** Kysely's PostgreSQL dialect on a driver that asks a read again when its connection broke. */
class RetryingPostgresDialect extends PostgresDialect {
  constructor(
    private readonly settings: ConstructorParameters<typeof PostgresDialect>[0],
    private readonly retryForMs: number,
  ) {
    super(settings);
  }

  override createDriver(): Driver {
    return new RetryingPostgresDriver(this.settings, this.retryForMs);
  }
}

/**
 * A query built with `selectFrom` outside a transaction reads and writes nothing else: when its
 * connection broke (a restart ended the session, or the pool handed out one the server had
 * just closed), it is asked again on a fresh connection for up to `retryForMs`. Statements in a
 * transaction are not: the transaction is run again whole (the events seam); nor raw SQL,
 * which may call functions that change something (nextval, advisory locks).
 */
class RetryingPostgresDriver extends PostgresDriver {
  constructor(
    settings: ConstructorParameters<typeof PostgresDriver>[0],
    private readonly retryForMs: number,
  ) {
    super(settings);
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    return new RetryingConnection((await super.acquireConnection()) as PooledConnection, this);
  }

  override async releaseConnection(connection: PooledConnection): Promise<void> {
    if (!(connection instanceof RetryingConnection)) return super.releaseConnection(connection);
    // None when its broken connection went back and no fresh one came: nothing to release twice.
    if (connection.current !== null) await super.releaseConnection(connection.current);
  }

  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (connection instanceof RetryingConnection) connection.inTransaction = true;
    await super.beginTransaction(connection, settings);
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await super.commitTransaction(connection);
    } finally {
      if (connection instanceof RetryingConnection) connection.inTransaction = false;
    }
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await super.rollbackTransaction(connection);
    } finally {
      if (connection instanceof RetryingConnection) connection.inTransaction = false;
    }
  }

  /** The broken connection is closed (ClosingClient) and a fresh one taken in its place. */
  async replace(broken: PooledConnection): Promise<PooledConnection> {
    await super.releaseConnection(broken);
    return (await super.acquireConnection()) as PooledConnection;
  }

  get retryWindowMs(): number {
    return this.retryForMs;
  }
}

/** Kysely's own connection of its PostgreSQL driver (declared, not exported, by Kysely). */
type PooledConnection = Parameters<PostgresDriver['releaseConnection']>[0];

class RetryingConnection implements DatabaseConnection {
  inTransaction = false;

  constructor(
    public current: PooledConnection | null,
    private readonly driver: RetryingPostgresDriver,
  ) {}

  /** A read whose connection broke is asked again, each outage for up to `retryForMs` from the loss (OutageWindow). */
  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const outage = new OutageWindow(this.driver.retryWindowMs);
    let pause = FIRST_RETRY_PAUSE_MS;
    for (let reconnected = false; ; ) {
      const connection = this.inUse();
      try {
        return await connection.executeQuery<R>(compiledQuery);
      } catch (error) {
        const rereadable = !this.inTransaction && compiledQuery.query.kind === 'SelectQueryNode';
        if (!rereadable || !isConnectionLost(error)) throw error;
        if (closedForStaleStatement(error)) {
          // Closed for a statement a migration made stale: the server answered, no outage. At once.
          if (!outage.staleConnection()) throw error;
        } else {
          // Lost again on a connection had after the last loss: a new outage.
          if (outage.lost(reconnected)) pause = FIRST_RETRY_PAUSE_MS;
          if (!outage.allows(pause)) throw error;
          await sleep(pause);
          pause = Math.min(pause * 2, LONGEST_RETRY_PAUSE_MS);
        }
        // Given back before a fresh one is asked for: should none come, it is not given back twice.
        this.current = null;
        this.current = await this.driver.replace(connection);
        reconnected = true;
      }
    }
  }

  streamQuery<R>(compiledQuery: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inUse().streamQuery<R>(compiledQuery, chunkSize);
  }

  private inUse(): PooledConnection {
    if (this.current === null) throw new Error('the connection was lost and no fresh one could be had');
    return this.current;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Migrations could not be applied: the one that failed (null: none was reached) and the driver's error code. */
export class MigrationFailed extends Error {
  override readonly name = 'MigrationFailed';

  constructor(
    message: string,
    readonly migrationName: string | null,
    readonly code: string | null,
  ) {
    super(message);
  }
}

/** The database could not be opened at start; the message names it (password masked) and the cause. */
export class DatabaseOpenFailed extends Error {
  override readonly name = 'DatabaseOpenFailed';

  constructor(
    message: string,
    readonly code: string | null,
  ) {
    super(message);
  }
}

/** Applies the migrations up to and including `name`: for a test of a migration on the data before it. */
export async function migrateUpTo(db: Db, name: string): Promise<void> {
  const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo(name);
  if (error !== undefined) throw error;
}

/** Applies pending migrations and returns the names applied now (none when up to date). */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const reason = error instanceof Error ? error.message : String(error ?? 'unknown error');
    const code = errorCode(error);
    const suffix = code === null ? '' : ` (${code})`;
    const pending = Object.keys(migrations).filter(
      (name) => !(results ?? []).some((result) => result.migrationName === name && result.status === 'Success'),
    );
    const message =
      failed === undefined
        ? `cannot apply the migrations (${pending.join(', ') || 'none pending'}): ${reason}${suffix}`
        : `migration ${failed.migrationName} failed: ${reason}${suffix}`;
    throw new MigrationFailed(message, failed?.migrationName ?? null, code);
  }
  return (results ?? []).filter((result) => result.status === 'Success').map((result) => result.migrationName);
}

export interface MigrationState {
  readonly name: string;
  /** null while pending. */
  readonly appliedAt: Date | null;
}

/** Every migration the portal knows, in order, with the time it was applied to this database. */
export async function migrationStatus(db: Db): Promise<MigrationState[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const list = await migrator.getMigrations();
  return list.map((migration) => ({ name: migration.name, appliedAt: migration.executedAt ?? null }));
}

function errorCode(error: unknown): string | null {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  return typeof code === 'string' && code !== '' ? code : null;
}
