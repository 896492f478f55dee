// Starts a real portal (real HTTP server, real SQLite file in a temporary directory) on a
// random loopback port, with the Admin API enabled, and offers small request helpers.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { resolvePortalConfig } from '../../src/config/load.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import type { Clock } from '../../src/core/time.js';
import { KeyStore } from '../../src/keys/key-store.js';
import { startPortal, type RunningPortal } from '../../src/portal.js';
import { generateSecrets } from '../../src/cli/generate-secrets.js';

export interface TestPortalOptions {
  /** Merged over a default single-profile configuration. */
  readonly config?: Partial<PortalConfigFile>;
  readonly adminApi?: boolean;
  readonly clock?: Clock;
  readonly random?: () => number;
  /** The portal's logger; default: silent (or TEST_LOG_LEVEL). */
  readonly logger?: Logger;
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
  readonly adminBase: string;
  readonly secret: string;
  get(path: string, query?: Record<string, string>, headers?: Record<string, string>): Promise<ApiResponse>;
  post(path: string, form?: Record<string, string> | URLSearchParams, headers?: Record<string, string>): Promise<ApiResponse>;
  request(path: string, init: RequestInit): Promise<ApiResponse>;
  close(): Promise<void>;
}

/** A node URL where nothing listens: nodes are unreachable unless a test starts one. */
export const UNREACHABLE_NODE = 'http://127.0.0.1:9';

export const defaultTestConfig: PortalConfigFile = {
  baseUrl: 'http://127.0.0.1/vpn-user-portal/',
  listen: { host: '127.0.0.1', port: 0 },
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

export async function startTestPortal(options: TestPortalOptions = {}): Promise<TestPortal> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-test-'));
  const config = resolvePortalConfig({ ...defaultTestConfig, ...options.config, dataDir }, 'test configuration');
  generateSecrets(config, { adminApi: options.adminApi ?? true, node: undefined }, () => {});
  const portal = await startPortal(config, {
    logger: options.logger ?? pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.random === undefined ? {} : { random: options.random }),
  });
  const adminBase = `${portal.url}${config.basePath}/admin/api/v1`;
  const secret = (options.adminApi ?? true) ? readSecret(config.keyDir) : '';
  const auth = { authorization: `Bearer ${secret}` };

  const request = async (target: string, init: RequestInit): Promise<ApiResponse> => {
    const response = await fetch(target.startsWith('http') ? target : `${adminBase}${target}`, init);
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
  };

  return {
    portal,
    dataDir,
    adminBase,
    secret,
    request,
    get: (target, query = {}, headers = {}) => {
      const search = new URLSearchParams(query).toString();
      return request(`${target}${search === '' ? '' : `?${search}`}`, { headers: { ...auth, ...headers } });
    },
    post: (target, form = {}, headers = {}) =>
      request(target, { method: 'POST', body: form instanceof URLSearchParams ? form : new URLSearchParams(form), headers: { ...auth, ...headers } }),
    async close() {
      await portal.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

function readSecret(keyDir: string): string {
  return readFileSync(new KeyStore(keyDir).adminApiKeyPath, 'utf8').trim();
}
