// PostgreSQL for the tests: test/run.sh starts a throw-away server and passes its URL in
// TEST_POSTGRES_URL; on the PostgreSQL pass TEST_DATABASE_URL is set too, and every test
// portal gets a database of its own on that server (see test-portal.ts). Tests that are about
// PostgreSQL itself (test/**/postgres-*.test.ts) fail — they never skip — when no server is given.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { DatabaseLocation } from '../../src/config/portal-config.js';

/** The server the PostgreSQL tests use; throws when there is none. */
export function postgresServerUrl(): string {
  const url = process.env['TEST_POSTGRES_URL'] ?? process.env['TEST_DATABASE_URL'];
  if (url === undefined || url === '') {
    throw new Error(
      'this test needs a PostgreSQL server: run it through test/run.sh (which starts a throw-away one), or set TEST_POSTGRES_URL=postgres://USER:PASSWORD@HOST:PORT/postgres',
    );
  }
  return url;
}

/** The URL of database `name` on the server of `serverUrl`. */
export function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.href;
}

/**
 * Creates a database with a random name `vpt_…` and returns its name and URL: empty, or a copy
 * of `template` (a template database on the same server: see migrated-databases.ts).
 */
export async function createTestDatabase(
  serverUrl: string,
  template?: string,
): Promise<{ readonly name: string; readonly url: string }> {
  const name = `vpt_${randomBytes(8).toString('hex')}`;
  const copy = template === undefined ? '' : ` TEMPLATE ${template}`;
  await onServer(serverUrl, (client) => client.query(`CREATE DATABASE ${name}${copy}`));
  return { name, url: databaseUrl(serverUrl, name) };
}

/** Drops a test database, closing whatever connections are still open to it. */
export async function dropTestDatabase(serverUrl: string, name: string): Promise<void> {
  if (!/^vpt_[0-9a-f]+$/.test(name)) throw new Error(`refusing to drop "${name}": not a test database`);
  await onServer(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/** Runs one piece of work on a connection of its own to `url`. */
export async function onServer<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const droppedAtExit = new Set<string>();
let dropListenerAdded = false;

/**
 * Drops `name` when this test process is about to exit: for databases that outlive one
 * portal, as an SQLite file outlives it in a data directory the test owns.
 */
export function dropAtExit(serverUrl: string, name: string): void {
  if (!dropListenerAdded) {
    dropListenerAdded = true;
    process.on('beforeExit', () => {
      const names = [...droppedAtExit];
      droppedAtExit.clear();
      // The drops keep the event loop busy; beforeExit comes again once they are done, with nothing left.
      for (const each of names) void dropTestDatabase(serverUrl, each).catch(() => undefined);
    });
  }
  droppedAtExit.add(name);
}

/**
 * An empty database for a migration test: on the PostgreSQL server of TEST_DATABASE_URL in the
 * PostgreSQL pass (dropped afterwards), else a SQLite file in a directory removed afterwards.
 */
export async function migrationTestLocation(
  t: { after: (fn: () => Promise<void> | void) => void },
  label: string,
): Promise<DatabaseLocation> {
  const server = process.env['TEST_DATABASE_URL'];
  if (server !== undefined && server !== '') {
    const { name, url } = await createTestDatabase(server);
    t.after(() => dropTestDatabase(server, name));
    return { dialect: 'postgres', url };
  }
  const directory = mkdtempSync(path.join(tmpdir(), `vpn-portal-${label}-`));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  return { dialect: 'sqlite', path: path.join(directory, 'db.sqlite') };
}
