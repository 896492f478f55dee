// Reads, validates and resolves the configuration. Every error names the file and the
// option (`config.json: ProfileList[0].wRangeFour: ...`) so an administrator can fix it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { durationMilliseconds, type IsoDuration } from '../shared/iso-duration.js';
import { secretFileWarning } from './secret-files.js';
import { ConfigError } from './config-error.js';
import { boundedMilliseconds, mustParseDuration, type Report, type WarnOfSecretFile } from './option-checks.js';
import { loadAppleSigning } from './apple-signing.js';
import { resolveConsoleOidc } from './console-oidc.js';
import { resolveDatabase, resolveDatabaseRetryFor, resolveDatabaseTimeout } from './database-options.js';
import { embeddedDefaultConfig } from './defaults.js';
import type { PortalConfig, WireGuardProxy } from './portal-config.js';
import { resolveEnrollment } from './enrollment.js';
import { checkAllowLists, resolveBaseUrl, resolveListen, resolveMetrics } from './listen.js';
import { resolveMdmInventory } from './mdm-inventory.js';
import { resolveProfileList } from './profile-list.js';
import { portalConfigSchema, type ParsedPortalConfig } from './schema.js';

export { ConfigError };

/** Loads `configPath`, or the embedded default configuration when no path is given. */
export function loadPortalConfig(configPath?: string): PortalConfig {
  if (configPath === undefined) return resolvePortalConfig(embeddedDefaultConfig, 'embedded default configuration');
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (error) {
    throw new ConfigError(`${configPath}: cannot read the configuration file (${(error as Error).message})`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${configPath}: not valid JSON (${(error as Error).message})`);
  }
  // Relative paths in a file are taken from the file's folder, so a systemd unit's working
  // directory does not matter (the node agent does the same).
  return resolvePortalConfig(document, configPath, path.dirname(path.resolve(configPath)));
}

/** `baseDir` anchors relative paths (`dataDir`, `database`, `apple.signing*`); the working directory by default. */
export function resolvePortalConfig(document: unknown, source: string, baseDir: string = process.cwd()): PortalConfig {
  const parsed = portalConfigSchema.safeParse(document);
  if (!parsed.success) throw new ConfigError(describeIssues(source, parsed.error));
  const problems: string[] = [];
  const config = resolve(parsed.data, source, baseDir, (option, message) =>
    problems.push(`${source}: ${option}: ${message}`),
  );
  if (problems.length > 0) throw new ConfigError(problems.join('\n'));
  return config;
}

function resolve(raw: ParsedPortalConfig, source: string, baseDir: string, report: Report): PortalConfig {
  const baseUrl = resolveBaseUrl(raw);
  const secretFileWarnings: string[] = [];
  const warnOfSecretFile: WarnOfSecretFile = (option, file) => {
    const warning = secretFileWarning(option, file);
    if (warning !== null) secretFileWarnings.push(warning);
  };
  const dataDir = path.resolve(baseDir, raw.dataDir);
  const database = resolveDatabase(raw.database, dataDir, baseDir, report);
  checkAllowLists(raw, report);

  const { profiles, nodes } = resolveProfileList(raw.ProfileList, report);

  return {
    source,
    baseUrl,
    basePath: baseUrl.pathname.replace(/\/+$/, ''),
    listen: resolveListen(raw.listen, report),
    dataDir,
    keyDir: path.join(dataDir, 'keys'),
    database,
    databaseTimeoutMs: resolveDatabaseTimeout(raw.databaseTimeout, report),
    databaseRetryForMs: resolveDatabaseRetryFor(raw.databaseRetryFor, report),
    databasePoolSize: raw.databasePoolSize,
    metrics: resolveMetrics(raw.metrics, report),
    adminApi: raw.adminApi,
    adminConsole: {
      enabled: raw.adminConsole.enabled,
      idleTimeoutMs: boundedMilliseconds(
        raw.adminConsole.idleTimeout,
        'adminConsole.idleTimeout',
        CONSOLE_IDLE_BOUNDS,
        report,
      ),
      sessionLifetimeMs: boundedMilliseconds(
        raw.adminConsole.sessionLifetime,
        'adminConsole.sessionLifetime',
        CONSOLE_LIFETIME_BOUNDS,
        report,
      ),
      oidc: resolveConsoleOidc(
        raw.adminConsole.oidc,
        baseUrl,
        baseDir,
        profiles.map((profile) => profile.profileId),
        report,
      ),
    },
    nodeApi: raw.nodeApi,
    webhooks: {
      allowPrivateTargets: raw.webhooks.allowPrivateTargets,
      timeoutMs: boundedMilliseconds(raw.webhooks.timeout, 'webhooks.timeout', WEBHOOK_TIMEOUT_BOUNDS, report),
      retryFor: atLeastOneDay(raw.webhooks.retryFor, 'webhooks.retryFor', report),
      deliveryLogRetention: atLeastOneDay(raw.webhooks.deliveryLogRetention, 'webhooks.deliveryLogRetention', report),
    },
    enrollment: resolveEnrollment(raw.enrollment, baseDir, report, warnOfSecretFile),
    reconcileIntervalMs: Math.max(1000, durationMilliseconds(mustParseDuration(raw.reconcileInterval))),
    mdmInventory: resolveMdmInventory(raw, baseDir, report, warnOfSecretFile),
    connectionLogRetention: mustParseDuration(raw.connectionLogRetention),
    connectScript:
      raw.connectScriptPath === undefined
        ? null
        : {
            path: path.resolve(baseDir, raw.connectScriptPath),
            timeoutMs: boundedMilliseconds(
              raw.connectScriptTimeout,
              'connectScriptTimeout',
              SCRIPT_TIMEOUT_BOUNDS,
              report,
            ),
          },
    connectionLogLines: { enabled: raw.Log.syslogConnectionEvents, originatingIp: raw.Log.originatingIp },
    logLevel: raw.logLevel,
    auditLogRetention: mustParseDuration(raw.auditLogRetention),
    revocationDeadlineMs: boundedMilliseconds(
      raw.revocationDeadline,
      'revocationDeadline',
      REVOCATION_DEADLINE_BOUNDS,
      report,
    ),
    sessionExpiry: mustParseDuration(raw.sessionExpiry),
    expiryWarning: mustParseDuration(raw.expiryWarning),
    caExpiry: mustParseDuration(raw.caExpiry),
    supportedSessionExpiry: [...new Set([raw.sessionExpiry, ...raw.supportedSessionExpiry])],
    wireGuard: {
      listenPort: raw.WireGuard.listenPort,
      mtu: raw.WireGuard.setMtu ?? null,
      proxy: resolveWireGuardProxy(raw.WireGuard, report),
    },
    appleSigning: loadAppleSigning(raw.apple, baseDir, new Date(), report, warnOfSecretFile),
    secretFileWarnings,
    profiles,
    nodes,
  };
}

/** A hook that takes longer than a minute holds up an OpenVPN client's connect for too long. */
const SCRIPT_TIMEOUT_BOUNDS = { minMs: 1_000, maxMs: 60_000, text: 'between PT1S and PT1M' } as const;

/** Less than a second is shorter than one node's answer; more than an hour is no alarm. */
const REVOCATION_DEADLINE_BOUNDS = { minMs: 1_000, maxMs: 3_600_000, text: 'between PT1S and PT1H' } as const;

/** A receiver that needs more than a minute to say "received" holds a delivery slot for too long. */
const WEBHOOK_TIMEOUT_BOUNDS = { minMs: 1_000, maxMs: 60_000, text: 'between PT1S and PT1M' } as const;

/** Webhooks are retried for at least a day (a receiver down overnight still gets everything), and logged as long. */
function atLeastOneDay(text: string, option: string, report: Report): IsoDuration {
  const duration = mustParseDuration(text);
  if (durationMilliseconds(duration) < 86_400_000) report(option, `"${text}" must be at least P1D`);
  return duration;
}

/** A console session idles out after a minute to a day, and lives a minute to a week. */
const CONSOLE_IDLE_BOUNDS = { minMs: 60_000, maxMs: 86_400_000, text: 'between PT1M and P1D' } as const;
const CONSOLE_LIFETIME_BOUNDS = { minMs: 60_000, maxMs: 7 * 86_400_000, text: 'between PT1M and P7D' } as const;

function resolveWireGuardProxy(raw: ParsedPortalConfig['WireGuard'], report: Report): WireGuardProxy {
  if (raw.onlyProxy && !raw.enableProxy) {
    report(
      'WireGuard.onlyProxy',
      'needs "enableProxy": true, otherwise WireGuard profiles would offer no transport at all',
    );
  }
  if (raw.proxyUrl !== undefined) {
    const url = new URL(raw.proxyUrl);
    // The node's host name is appended as a path segment; a query or fragment would swallow it.
    if (url.search !== '' || url.hash !== '')
      report('WireGuard.proxyUrl', `"${raw.proxyUrl}" must not have a query or fragment`);
  }
  if (!raw.enableProxy) return { enabled: false };
  return {
    enabled: true,
    only: raw.onlyProxy,
    proxyUrl: raw.proxyUrl === undefined ? null : raw.proxyUrl.replace(/\/+$/, ''),
  };
}

function describeIssues(source: string, error: z.ZodError): string {
  return error.issues
    .map((issue) => `${source}: ${formatPath(issue.path) || '(top level)'}: ${issue.message}`)
    .join('\n');
}

function formatPath(segments: readonly PropertyKey[]): string {
  return segments
    .map((segment, index) =>
      typeof segment === 'number' ? `[${segment}]` : `${index === 0 ? '' : '.'}${String(segment)}`,
    )
    .join('');
}
