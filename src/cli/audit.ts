// `vpn-portal audit`: reads the audit log through the Admin API (GET /audit_log, scope admin)
// with the typed client, as the coming `vpn-portal admin …` commands do; meant to become
// `vpn-portal admin audit` once they exist. The portal is found at the configuration's
// baseUrl (or --url); the key comes from VPN_PORTAL_ADMIN_KEY, --key-file, or the
// specification's secret in DATA/keys/admin-api.key, and is never printed.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AdminApiClient, AdminApiError } from '../admin-client/admin-api-client.js';
import { ConfigError, loadPortalConfig } from '../config/load.js';
import { KeyStore } from '../keys/key-store.js';
import type { AuditEntry, AuditLogQuery } from '../protocol/admin-api.js';

export const AUDIT_USAGE = `  vpn-portal audit [--since TIME] [--until TIME] [--key NAME] [--user ID] [--limit N] [--cursor C] [--all] [--json]
                   [--url BASE_URL] [--key-file FILE] [--config FILE]
                                                           read the Admin API audit log, newest first (needs scope admin)`;

/** Runs `audit`; returns the exit code. */
export async function runAuditCommand(args: readonly string[], print: (line: string) => void, printError: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      config: { type: 'string' },
      url: { type: 'string' },
      'key-file': { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      key: { type: 'string' },
      user: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      all: { type: 'boolean' },
      json: { type: 'boolean' },
    },
    strict: true,
  });
  const config = loadPortalConfig(values.config);
  const client = new AdminApiClient({ baseUrl: values.url ?? config.baseUrl, key: adminKey(values['key-file'], new KeyStore(config.keyDir)) });
  if (values.limit !== undefined && !/^[1-9]\d*$/.test(values.limit)) throw new ConfigError(`--limit: "${values.limit}" is not a positive number`);
  let query: AuditLogQuery = {
    ...(values.since === undefined ? {} : { since: values.since }),
    ...(values.until === undefined ? {} : { until: values.until }),
    ...(values.key === undefined ? {} : { key: values.key }),
    ...(values.user === undefined ? {} : { user_id: values.user }),
    ...(values.limit === undefined ? {} : { limit: Number(values.limit) }),
    ...(values.cursor === undefined ? {} : { cursor: values.cursor }),
  };
  try {
    for (;;) {
      const page = await client.auditLog(query);
      for (const entry of page.audit_log) print(values.json === true ? JSON.stringify(entry) : describe(entry));
      if (page.next_cursor === null) return 0;
      if (values.all !== true) {
        if (values.json !== true) print(`(more: --cursor ${page.next_cursor}, or --all)`);
        return 0;
      }
      query = { ...query, cursor: page.next_cursor };
    }
  } catch (error) {
    if (!(error instanceof AdminApiError)) throw error;
    printError(`audit: the portal answered ${error.status}: ${error.message}`);
    return 1;
  }
}

function adminKey(keyFile: string | undefined, keys: KeyStore): string {
  const fromEnvironment = process.env['VPN_PORTAL_ADMIN_KEY'];
  if (fromEnvironment !== undefined && fromEnvironment !== '') return fromEnvironment.trim();
  const file = keyFile ?? keys.adminApiKeyPath;
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(`audit: cannot read the admin key from ${file} (${(error as Error).message}); set VPN_PORTAL_ADMIN_KEY or --key-file`);
  }
}

/** One line per entry: time, key, address, call, status, user, what it touched, parameters, why. */
function describe(entry: AuditEntry): string {
  const parameters = Object.entries(entry.parameters)
    .filter(([name]) => name !== 'user_id')
    .map(([name, value]) => `${name}=${JSON.stringify(value)}`)
    .join(' ');
  return [
    entry.at,
    entry.key_name ?? '(no valid key)',
    entry.source_address,
    entry.call,
    String(entry.status),
    entry.user_id === null ? '-' : `user=${JSON.stringify(entry.user_id)}`,
    entry.connection_ids.length === 0 ? '' : `connections=${entry.connection_ids.join(',')}`,
    parameters,
    entry.detail === null ? '' : `(${entry.detail})`,
  ]
    .filter((part) => part !== '')
    .join('  ');
}
