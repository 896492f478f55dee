// Where the portal listens and whom it lets in: `baseUrl` (or the one the listen address
// implies), `listen` and its HTTP timeouts, `metrics.listen`, and every allow list of prefixes.
import { boundedMilliseconds, checkPrefix, parseListenAddress, type Report } from './option-checks.js';
import type { PortalConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

/** HTTP timeouts: Node checks them once a second, so less than that means nothing; more than 10 minutes holds connections for no one. */
const HTTP_TIMEOUT_BOUNDS = { minMs: 1_000, maxMs: 600_000, text: 'between PT1S and PT10M' } as const;

/** Without baseUrl the portal is where it listens, so the quick start's URLs are right. */
export function resolveBaseUrl(raw: ParsedPortalConfig): URL {
  return new URL(
    raw.baseUrl ?? `http://${hostForUrl(listenHostToReach(raw.listen.host))}:${raw.listen.port}/vpn-user-portal/`,
  );
}

export function resolveListen(raw: ParsedPortalConfig['listen'], report: Report): PortalConfig['listen'] {
  return {
    host: raw.host,
    port: raw.port,
    maxConnectionsPerAddress: raw.maxConnectionsPerAddress,
    requestTimeoutMs: boundedMilliseconds(raw.requestTimeout, 'listen.requestTimeout', HTTP_TIMEOUT_BOUNDS, report),
    keepAliveTimeoutMs: boundedMilliseconds(
      raw.keepAliveTimeout,
      'listen.keepAliveTimeout',
      HTTP_TIMEOUT_BOUNDS,
      report,
    ),
  };
}

export function resolveMetrics(raw: ParsedPortalConfig['metrics'], report: Report): PortalConfig['metrics'] {
  return raw.listen === null ? null : parseListenAddress(raw.listen, 'metrics.listen', report);
}

/** Every list of IP prefixes that decides who may call or be called. */
export function checkAllowLists(raw: ParsedPortalConfig, report: Report): void {
  const lists: [string, readonly string[]][] = [
    ['adminApi.allowList', raw.adminApi.allowList],
    ['adminApi.trustedProxyList', raw.adminApi.trustedProxyList],
    ['nodeApi.allowList', raw.nodeApi.allowList],
    ['webhooks.allowPrivateTargets', raw.webhooks.allowPrivateTargets],
    ['enrollment.allowList', raw.enrollment.allowList],
    ['scim.allowList', raw.scim.allowList],
    ['mdmPush.jamf.allowList', raw.mdmPush.jamf?.allowList ?? []],
    ['enrollment.clientCertificate.trustedProxyList', raw.enrollment.clientCertificate?.trustedProxyList ?? []],
  ];
  for (const [option, entries] of lists) {
    for (const [index, entry] of entries.entries()) checkPrefix(entry, `${option}[${index}]`, report);
  }
}

/** The address a client uses to reach a server listening on `host` (any-address → loopback). */
function listenHostToReach(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '::1';
  return host;
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
