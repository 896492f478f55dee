// Starts a real portal (real HTTP server, real database) on a random loopback port, with the
// Admin API enabled, and offers small request helpers; every Admin API answer they and its
// typed client get is checked against its call's answer schema (strict-answers.ts). The
// database is an SQLite file in a temporary directory, or, when TEST_DATABASE_URL names a
// PostgreSQL server (the PostgreSQL pass of test/run.sh), a fresh database `vpt_<random>` on
// that server, dropped on close; either comes with the schema in place (migrated-databases.ts).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { resolvePortalConfig } from '../../src/config/load.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import type { PortalConfig } from '../../src/config/portal-config.js';
import type { Clock } from '../../src/shared/time.js';
import { AdminApiClient } from '../../src/admin-client/admin-api-client.js';
import { KeyStore } from '../../src/keys/key-store.js';
import { startPortal, type RunningPortal } from '../../src/portal.js';
import { generateSecrets } from '../../src/cli/generate-secrets.js';
import { copyMigratedSqlite, postgresTemplate } from './migrated-databases.js';
import { createTestDatabase, databaseUrl, dropAtExit, dropTestDatabase } from './postgres.js';
import { checkAnswer, checkingFetch } from './strict-answers.js';

export interface TestPortalOptions {
  /** Merged over a default single-profile configuration. */
  readonly config?: Partial<PortalConfigFile>;
  readonly adminApi?: boolean;
  readonly clock?: Clock;
  readonly random?: () => number;
  /** The portal's logger; default: silent (or TEST_LOG_LEVEL). */
  readonly logger?: Logger;
  /**
   * A data directory (keys, database) the test owns, instead of a fresh temporary one that
   * close() removes: to restart a portal on a new configuration with the same keys, or to
   * hand a node its key before the portal runs. Missing keys are created, existing ones kept.
   */
  readonly dataDir?: string;
  /**
   * Default: a fresh database (see the top of this file); in a data directory the test owns,
   * the same database each time, as the SQLite file there would be. 'sqlite' pins SQLite, for
   * tests of SQLite itself. A `database` option value (`sqlite:PATH`, `postgres://…`) puts the
   * portal on that existing database and leaves it there: several portals on one database.
   */
  readonly database?: string;
}

export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  json(): unknown;
}

export interface TestPortal {
  readonly portal: RunningPortal;
  readonly dataDir: string;
  /** The portal's `database` option: give it to another portal to share the database. */
  readonly database: string;
  readonly adminBase: string;
  /** The Node API base URL: a node agent's `apiUrl`. */
  readonly nodeApiUrl: string;
  readonly secret: string;
  /** The typed Admin API client, with the portal's secret. */
  readonly admin: AdminApiClient;
  get(path: string, query?: Record<string, string>, headers?: Record<string, string>): Promise<ApiResponse>;
  post(
    path: string,
    form?: Record<string, string> | URLSearchParams,
    headers?: Record<string, string>,
  ): Promise<ApiResponse>;
  request(path: string, init: RequestInit): Promise<ApiResponse>;
  /**
   * Runs a reconcile pass and waits for the passes it sets off. A node that started after the
   * portal failed the portal's first pass and is left alone for a few seconds; once this
   * returns, the portal knows the node answers and pushes every change to it at once.
   */
  reconcile(): Promise<void>;
  /** Stops the portal (again: nothing) and removes its data directory unless the test owns it. */
  close(): Promise<void>;
}

/** A node URL where nothing listens: nodes are unreachable unless a test starts one. */
export const UNREACHABLE_NODE = 'http://127.0.0.1:2';

export const defaultTestConfig: PortalConfigFile = {
  baseUrl: 'http://127.0.0.1/vpn-user-portal/',
  listen: { host: '127.0.0.1', port: 0 },
  // Many test portals run at once: each gets a free port.
  metrics: { listen: '127.0.0.1:0' },
  logLevel: 'silent',
  reconcileInterval: 'PT1H',
  supportedSessionExpiry: ['PT12H', 'P1Y'],
  ProfileList: [
    {
      profileId: 'employees',
      displayName: 'Employees',
      hostName: 'vpn.example.org',
      wRangeFour: '10.44.0.0/24',
      wRangeSix: 'fd44::/64',
      dnsServerList: ['9.9.9.9'],
      nodeUrl: UNREACHABLE_NODE,
    },
  ],
};

/** The configuration a test portal runs on, as a `portal.json` for a command to read. */
export function testPortalConfigFile(
  config: Partial<PortalConfigFile> | undefined,
  dataDir: string,
  database: string,
): PortalConfigFile {
  return { ...defaultTestConfig, ...config, dataDir, database };
}

export async function startTestPortal(options: TestPortalOptions = {}): Promise<TestPortal> {
  const ownDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), 'vpn-portal-test-'));
  mkdirSync(dataDir, { recursive: true });
  const database = await testDatabase(options.database, dataDir, ownDataDir);
  let config: PortalConfig;
  let portal: RunningPortal;
  try {
    config = resolvePortalConfig(testPortalConfigFile(options.config, dataDir, database.value), 'test configuration');
    await generateSecrets(config, { adminApi: options.adminApi ?? true, node: undefined }, () => {});
    portal = await startPortal(config, {
      logger: options.logger ?? pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.random === undefined ? {} : { random: options.random }),
    });
  } catch (error) {
    await database.dispose();
    if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const adminBase = `${portal.url}${config.basePath}/admin/api/v1`;
  const secret = (options.adminApi ?? true) ? readSecret(config.keyDir) : '';
  const auth = { authorization: `Bearer ${secret}` };

  const request = async (target: string, init: RequestInit): Promise<ApiResponse> => {
    const url = target.startsWith('http') ? target : `${adminBase}${target}`;
    const response = await fetch(url, init);
    const text = await response.text();
    // Every answer is held to its call's definition (src/protocol/admin-api.ts).
    checkAnswer(adminBase, url, response.status, text);
    return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
  };

  let closing: Promise<void> | null = null;
  return {
    portal,
    dataDir,
    database: database.value,
    adminBase,
    nodeApiUrl: `${portal.url}${config.basePath}/node-api.php`,
    secret,
    admin: new AdminApiClient({
      baseUrl: `${portal.url}${config.basePath}/`,
      key: secret,
      fetch: checkingFetch(adminBase),
    }),
    request,
    get: (target, query = {}, headers = {}) => {
      const search = new URLSearchParams(query).toString();
      return request(`${target}${search === '' ? '' : `?${search}`}`, { headers: { ...auth, ...headers } });
    },
    post: (target, form = {}, headers = {}) =>
      request(target, {
        method: 'POST',
        body: form instanceof URLSearchParams ? form : new URLSearchParams(form),
        headers: { ...auth, ...headers },
      }),
    async reconcile() {
      await portal.reconcileNow();
      // A node that answers again sets off one more pass for it, queued behind the first.
      await portal.reconcileNow();
    },
    close() {
      closing ??= portal.close().then(async () => {
        await database.dispose();
        if (ownDataDir) rmSync(dataDir, { recursive: true, force: true });
      });
      return closing;
    },
  };
}

interface TestDatabase {
  readonly value: string;
  /** Drops a database made for this portal alone. */
  dispose(): Promise<void>;
}

async function testDatabase(
  requested: string | undefined,
  dataDir: string,
  ownDataDir: boolean,
): Promise<TestDatabase> {
  const keep = async (): Promise<void> => {};
  const server = process.env['TEST_DATABASE_URL'];
  if (requested === 'sqlite' || (requested === undefined && (server === undefined || server === ''))) {
    const file = path.join(dataDir, 'db.sqlite');
    if (requested === undefined && !existsSync(file)) await copyMigratedSqlite(file);
    return { value: `sqlite:${file}`, dispose: keep };
  }
  if (requested !== undefined) return { value: requested, dispose: keep };
  if (server === undefined) throw new Error('unreachable');
  if (ownDataDir) {
    const { name, url } = await createTestDatabase(server, postgresTemplate());
    return { value: url, dispose: () => dropTestDatabase(server, name) };
  }
  // The test's own data directory: its database lives as long as the test process.
  const nameFile = path.join(dataDir, 'test-database-name');
  if (existsSync(nameFile)) return { value: databaseUrl(server, readFileSync(nameFile, 'utf8').trim()), dispose: keep };
  const { name, url } = await createTestDatabase(server, postgresTemplate());
  writeFileSync(nameFile, `${name}\n`);
  dropAtExit(server, name);
  return { value: url, dispose: keep };
}

function readSecret(keyDir: string): string {
  return readFileSync(new KeyStore(keyDir).adminApiKeyPath, 'utf8').trim();
}

/** The portal's metrics page, as Prometheus would read it. */
export async function metricsText(portal: TestPortal): Promise<string> {
  return (await fetch(portal.portal.metricsUrl ?? '')).text();
}
