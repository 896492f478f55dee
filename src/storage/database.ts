// Opens the database and brings its schema up to date. SQLite runs in WAL mode with
// foreign keys on; the migrations are Kysely's, so the same ones will serve PostgreSQL.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Migration, type MigrationProvider } from 'kysely';
import type { DatabaseLocation } from '../config/portal-config.js';
import { initialSchema } from './migrations/0001-initial.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;

const migrations: Record<string, Migration> = {
  '0001-initial': initialSchema,
};

const migrationProvider: MigrationProvider = { getMigrations: async () => migrations };

export async function openDatabase(location: DatabaseLocation): Promise<Db> {
  mkdirSync(path.dirname(location.path), { recursive: true, mode: 0o700 });
  const sqlite = new SqliteDatabase(location.path);
  sqlite.pragma('journal_mode = WAL');
  // NORMAL is durable across application crashes in WAL mode; only a power loss can drop the last commits.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  await migrateToLatest(db);
  return db;
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

export async function migrateToLatest(db: Db): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error !== undefined || failed !== undefined) {
    const reason = error instanceof Error ? error.message : String(error ?? 'unknown error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${reason}`);
  }
}
