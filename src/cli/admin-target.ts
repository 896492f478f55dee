// Which portal `vpn-portal admin` talks to, and with which key: from flags, else the
// environment (VPN_PORTAL_URL, VPN_PORTAL_KEY_FILE), else the portal's own configuration file
// (its listen address and DATA/keys/admin-api.key), so an administrator on the portal host
// needs to say nothing at all.
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/config-error.js';
import type { PortalConfig } from '../config/portal-config.js';
import { KeyStore } from '../keys/key-store.js';

export interface AdminTarget {
  /** The portal's base URL, e.g. `http://127.0.0.1:8080/vpn-user-portal/`. */
  readonly baseUrl: string;
  readonly key: string;
}

export interface AdminTargetInput {
  readonly url: string | undefined;
  readonly keyFile: string | undefined;
  readonly config: string | undefined;
  readonly env: NodeJS.ProcessEnv;
}

export async function resolveAdminTarget(input: AdminTargetInput): Promise<AdminTarget> {
  const url = input.url ?? nonEmpty(input.env['VPN_PORTAL_URL']);
  const keyFile = input.keyFile ?? nonEmpty(input.env['VPN_PORTAL_KEY_FILE']);
  // The configuration is read only for what flags and environment leave open, and its module
  // (the whole configuration schema) is loaded only then: a script's command starts faster.
  let config: PortalConfig | undefined;
  const portalConfig = async (): Promise<PortalConfig> => {
    config ??= (await import('../config/load.js')).loadPortalConfig(input.config);
    return config;
  };
  const baseUrl = url ?? directUrl(await portalConfig());
  try {
    new URL(baseUrl);
  } catch {
    throw new ConfigError(`"${baseUrl}" is not a URL such as http://127.0.0.1:8080/vpn-user-portal/`);
  }
  return { baseUrl, key: readKey(keyFile ?? new KeyStore((await portalConfig()).keyDir).adminApiKeyPath) };
}

/**
 * The portal's own listening address rather than `baseUrl`: on the portal host this reaches
 * the portal directly (loopback is in the default allow-list), whatever reverse proxy `baseUrl`
 * names.
 */
function directUrl(config: PortalConfig): string {
  const { host, port } = config.listen;
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  const hostPart = reachable.includes(':') ? `[${reachable}]` : reachable;
  return `http://${hostPart}:${port}${config.basePath}/`;
}

function readKey(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError(
      `cannot read the Admin API key file ${file} (${code}): give --key-file FILE or set VPN_PORTAL_KEY_FILE`,
    );
  }
  const key = text.trim();
  // A key goes into an HTTP header: one token of visible characters (a wrong file is caught here, not as a header error).
  if (!/^[\x21-\x7e]+$/.test(key))
    throw new ConfigError(`${file} does not hold an Admin API key (one line of visible characters, as admin-api.key)`);
  return key;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
