// `vpn-portal db migrate|status|copy`: schema migrations by hand (the portal also applies
// them at start), and the move from one database to another (SQLite → PostgreSQL).
// Database URLs are printed with their password masked.
import { existsSync } from 'node:fs';
import { ConfigError } from '../config/config-error.js';
import { DatabaseLocationError, describeDatabase, parseDatabaseLocation } from '../config/database-location.js';
import type { DatabaseLocation } from '../config/portal-config.js';
import { CopyRefused, copyDatabase } from '../storage/copy.js';
import { connectDatabase, migrateToLatest, migrationStatus, openDatabase, type Db } from '../storage/database.js';
import { loadExistingPortalConfig } from './existing-portal.js';
import { describeUnknownCommand, parseOptions } from './options.js';
import { DB_USAGE } from './usage.js';

/** Runs a `db` subcommand; returns the exit code. */
export async function runDbCommand(
  args: readonly string[],
  print: (line: string) => void,
  printError: (line: string) => void,
): Promise<number> {
  try {
    return await dbCommand(args, print, printError);
  } catch (error) {
    // A database that cannot be reached or refuses the login: the message, not a stack trace
    // (pg's messages name the user and host, never the password).
    const code = (error as { code?: unknown }).code;
    if (
      error instanceof ConfigError ||
      !(error instanceof Error) ||
      typeof code !== 'string' ||
      code.startsWith('ERR_PARSE_ARGS')
    )
      throw error;
    printError(`db ${args[0] ?? ''}: ${error.message} (${code})`);
    return 1;
  }
}

async function dbCommand(
  args: readonly string[],
  print: (line: string) => void,
  printError: (line: string) => void,
): Promise<number> {
  const [subcommand, ...rest] = args;
  const { values } = parseOptions({
    args: [...rest],
    options: { config: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' } },
    strict: true,
  });
  switch (subcommand) {
    case 'migrate': {
      const location = loadExistingPortalConfig(values.config).database;
      return withDatabase(connectDatabase(location), async (db) => {
        const applied = await migrateToLatest(db);
        print(`database ${describeDatabase(location)}`);
        print(applied.length === 0 ? 'the schema is up to date' : applied.map((name) => `applied ${name}`).join('\n'));
        return 0;
      });
    }
    case 'status': {
      const location = loadExistingPortalConfig(values.config).database;
      return withDatabase(connectDatabase(location), async (db) => {
        const migrations = await migrationStatus(db);
        print(`database ${describeDatabase(location)}`);
        for (const migration of migrations)
          print(
            `${migration.name}  ${migration.appliedAt === null ? 'pending' : `applied ${migration.appliedAt.toISOString()}`}`,
          );
        const pending = migrations.filter((migration) => migration.appliedAt === null).length;
        print(
          pending === 0
            ? 'the schema is up to date'
            : `${pending} pending; "vpn-portal serve" applies them at start, or run "vpn-portal db migrate"`,
        );
        return 0;
      });
    }
    case 'copy': {
      if (values.from === undefined || values.to === undefined)
        throw new ConfigError(`db copy needs --from DATABASE and --to DATABASE\n${DB_USAGE}`);
      const from = databaseArgument('--from', values.from);
      const to = databaseArgument('--to', values.to);
      if (describeDatabase(from) === describeDatabase(to))
        throw new ConfigError('db copy: --from and --to name the same database');
      // A typo in --from must never become an empty "source" that copies nothing and succeeds.
      if (from.dialect === 'sqlite' && !existsSync(from.path))
        throw new ConfigError(`db copy --from: there is no database at ${from.path}`);
      const sourceMigrations = await withDatabase(connectDatabase(from), (db) => migrationStatus(db));
      if (sourceMigrations.every((migration) => migration.appliedAt === null)) {
        throw new ConfigError(
          `db copy --from: ${describeDatabase(from)} holds no portal data (it was never used by a portal)`,
        );
      }
      print(`copying ${describeDatabase(from)} to ${describeDatabase(to)}`);
      return withDatabase(await openDatabase(from), async (source) =>
        withDatabase(await openDatabase(to), async (target) => {
          try {
            const copied = await copyDatabase(source, target, ({ table, rows }) => print(`${table}: ${rows} rows`));
            print(`copied ${copied.length} tables; the row counts of source and target match`);
            return 0;
          } catch (error) {
            if (!(error instanceof CopyRefused)) throw error;
            printError(`db copy: ${error.message}`);
            return 1;
          }
        }),
      );
    }
    default:
      throw new ConfigError(
        `${describeUnknownCommand('db', subcommand ?? '', ['migrate', 'status', 'copy'])}\n${DB_USAGE}`,
      );
  }
}

function databaseArgument(option: string, text: string): DatabaseLocation {
  try {
    // A relative SQLite path on the command line is taken from the working directory.
    return parseDatabaseLocation(text, process.cwd());
  } catch (error) {
    if (error instanceof DatabaseLocationError) throw new ConfigError(`db copy ${option}: ${error.message}`);
    throw error;
  }
}

async function withDatabase<T>(db: Db, work: (db: Db) => Promise<T>): Promise<T> {
  try {
    return await work(db);
  } finally {
    await db.destroy();
  }
}
