// Opens the database and brings its schema up to date. SQLite (the embedded default) runs
// in WAL mode with foreign keys on; PostgreSQL goes through a `pg` connection pool and can be
// shared by several portal instances. Both run the same Kysely migrations, applied at start
// under Kysely's migration lock (on PostgreSQL a session advisory lock), so instances that
// start together apply each migration once.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  Kysely,
  Migrator,
  PostgresAdapter,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type Migration,
  type MigrationProvider,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import type { DatabaseLocation } from '../config/portal-config.js';
import { initialSchema } from './migrations/0001-initial.js';
import { listingOrder } from './migrations/0002-listing-order.js';
import { openVpnSchema } from './migrations/0003-openvpn.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;
type Executor = Kysely<Database> | Transaction<Database>;

/** Connections per portal instance; PostgreSQL's default max_connections (100) holds several instances. */
const POSTGRES_POOL_SIZE = 10;
/**
 * How long a statement waits for a lock another session holds before it fails (and the call
 * answers 503), as SQLite's busy timeout. `?lock_timeout=MS` in the URL overrides it.
 */
const POSTGRES_LOCK_TIMEOUT_MS = 5000;

const migrations: Record<string, Migration> = {
  '0001-initial': initialSchema,
  '0002-listing-order': listingOrder,
  '0003-openvpn': openVpnSchema,
};

const migrationProvider: MigrationProvider = { getMigrations: async () => migrations };

export interface OpenDatabaseOptions {
  /** Where failures of pooled connections are reported (PostgreSQL): a server restart, a failover, a broken network. */
  readonly onConnectionError?: (error: Error) => void;
}

/** Connects and applies pending migrations. */
export async function openDatabase(location: DatabaseLocation, options: OpenDatabaseOptions = {}): Promise<Db> {
  const db = connectDatabase(location, options);
  try {
    await migrateToLatest(db);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return db;
}

/** Connects without touching the schema (`vpn-portal db status`). */
export function connectDatabase(location: DatabaseLocation, options: OpenDatabaseOptions = {}): Db {
  if (location.dialect === 'postgres') {
    // Parameters in the URL win over these (pg gives the connection string precedence).
    const pool = new pg.Pool({ connectionString: location.url, max: POSTGRES_POOL_SIZE, lock_timeout: POSTGRES_LOCK_TIMEOUT_MS });
    // A connection the server closes (restart, failover) must not crash the portal, also while
    // it is checked out between two queries (the pool only listens while it is idle): the
    // query on it fails, the pool drops it, and the next query opens a new one.
    const report = options.onConnectionError ?? (() => {});
    pool.on('connect', (client) => client.on('error', report));
    pool.on('error', () => {}); // the same error, already reported by the client's listener
    return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  }
  mkdirSync(path.dirname(location.path), { recursive: true, mode: 0o700 });
  const sqlite = new SqliteDatabase(location.path);
  sqlite.pragma('journal_mode = WAL');
  // NORMAL is durable across application crashes in WAL mode; only a power loss can drop the last commits.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  return new Kysely<Database>({ dialect: new EmbeddedSqliteDialect(sqlite) });
}

/** True when `db` talks to PostgreSQL (for the few queries that differ between dialects). */
export function isPostgres(db: Executor | Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * Kysely's SQLite dialect, except for a ROLLBACK after SQLite rolled back by itself. After some
 * failures (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM, some SQLITE_BUSY) SQLite ends the
 * transaction; Kysely's ROLLBACK then fails with "cannot rollback - no transaction is active",
 * and that error would replace the one that says what happened. The driver asks the connection
 * (`inTransaction`, SQLite's autocommit flag) instead of guessing from error codes.
 */
class EmbeddedSqliteDialect extends SqliteDialect {
  constructor(private readonly sqlite: SqliteDatabase.Database) {
    super({ database: sqlite });
  }

  override createDriver(): Driver {
    return new SqliteDriverKeepingTheCause(this.sqlite);
  }
}

class SqliteDriverKeepingTheCause extends SqliteDriver {
  constructor(private readonly sqlite: SqliteDatabase.Database) {
    super({ database: withStatementCache(sqlite) });
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (!this.sqlite.inTransaction) return;
    await super.rollbackTransaction(connection);
  }
}

/**
 * Kysely prepares every query anew; the portal runs the same few dozen statements all the
 * time, so prepared statements are kept per SQL text (better-sqlite3 statements are reusable).
 */
function withStatementCache(sqlite: SqliteDatabase.Database): SqliteDatabase.Database {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return new Proxy(sqlite, {
    get(target, property, receiver) {
      if (property !== 'prepare') return Reflect.get(target, property, receiver) as unknown;
      return (sql: string) => {
        let statement = cache.get(sql);
        if (statement === undefined) {
          statement = target.prepare(sql);
          // Queries built with IN (...) lists vary in length; keep the cache bounded.
          if (cache.size < 1000) cache.set(sql, statement);
        }
        return statement;
      };
    },
  });
}

/** Applies pending migrations and returns the names applied now (none when up to date). */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const reason = error instanceof Error ? error.message : String(error ?? 'unknown error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${reason}`);
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
