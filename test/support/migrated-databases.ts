// Fresh databases that already have the portal's schema, for test portals: applying the
// migrations costs a test portal some 0.1 s on SQLite and 0.4–0.6 s on PostgreSQL, and the
// suite starts well over a thousand of them. The schema is made once — by the portal's own
// migrations, into a template — and copied: on SQLite once per test process, a file copied
// beside each portal; on PostgreSQL once per run, by test/run.sh, a template database that
// `CREATE DATABASE … TEMPLATE` copies on the server (TEST_POSTGRES_TEMPLATE names it).
// Tests of the migrations themselves make empty databases (postgres.ts, createTestDatabase).
//
//   node --import tsx test/support/migrated-databases.ts create SERVER_URL   prints the template's name
//   node --import tsx test/support/migrated-databases.ts drop SERVER_URL NAME
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/storage/database.js';
import { createTestDatabase, dropTestDatabase, onServer } from './postgres.js';

let sqliteTemplate: string | undefined;

/**
 * Puts an SQLite database with every migration applied at `target`, which must not exist yet:
 * a copy of this process's template, made on first use and removed when the process exits.
 */
export async function copyMigratedSqlite(target: string): Promise<void> {
  if (sqliteTemplate === undefined) {
    const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-schema-'));
    process.on('exit', () => rmSync(directory, { recursive: true, force: true }));
    const file = path.join(directory, 'db.sqlite');
    const db = await openDatabase({ dialect: 'sqlite', path: file });
    await db.destroy();
    // Closing the last connection folds the write-ahead log into the file and deletes it.
    if (existsSync(`${file}-wal`)) throw new Error(`the SQLite template ${file} kept its write-ahead log`);
    sqliteTemplate = file;
  }
  copyFileSync(sqliteTemplate, target);
}

/** The run's PostgreSQL template database (made by test/run.sh), if there is one. */
export function postgresTemplate(): string | undefined {
  const name = process.env['TEST_POSTGRES_TEMPLATE'];
  return name === undefined || name === '' ? undefined : name;
}

/**
 * Makes a database on `serverUrl`, lets the portal's migrations fill it, and turns it into a
 * template no session may connect to (a template being copied must have none).
 */
export async function createPostgresTemplate(serverUrl: string): Promise<string> {
  const { name, url } = await createTestDatabase(serverUrl);
  const db = await openDatabase({ dialect: 'postgres', url });
  await db.destroy();
  await onServer(serverUrl, (client) =>
    client.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`),
  );
  return name;
}

/** Drops a template made by createPostgresTemplate. */
export async function dropPostgresTemplate(serverUrl: string, name: string): Promise<void> {
  if (!/^vpt_[0-9a-f]+$/.test(name)) throw new Error(`refusing to drop "${name}": not a test database`);
  await onServer(serverUrl, (client) => client.query(`ALTER DATABASE ${name} WITH IS_TEMPLATE false`));
  await dropTestDatabase(serverUrl, name);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [command, serverUrl, name] = process.argv.slice(2);
  if (command === 'create' && serverUrl !== undefined) {
    console.log(await createPostgresTemplate(serverUrl));
  } else if (command === 'drop' && serverUrl !== undefined && name !== undefined) {
    await dropPostgresTemplate(serverUrl, name);
  } else {
    console.error('usage: migrated-databases.ts create SERVER_URL | drop SERVER_URL NAME');
    process.exit(2);
  }
}
