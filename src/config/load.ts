// Reads, validates and resolves the configuration: the entry points the CLI and tests import.
// Each section is checked in its own module (listen.ts, profile.ts, enrollment.ts, ...); this
// one reads the file, runs the schema and composes them. Every error names the file and the
// option (`config.json: ProfileList[0].wRangeFour: ...`) so an administrator can fix it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { durationMilliseconds } from '../shared/iso-duration.js';
import { resolveAdminConsole } from './admin-console.js';
import { loadAppleSigning } from './apple-signing.js';
import { ConfigError } from './config-error.js';
import { resolveDatabase, resolveDatabaseRetryFor, resolveDatabaseTimeout } from './database-options.js';
import { embeddedDefaultConfig } from './defaults.js';
import { describeEduVpnOption, type EduVpnSection, eduVpnOptionFate } from './eduvpn-options.js';
import { resolveEnrollment } from './enrollment.js';
import { checkAllowLists, resolveBaseUrl, resolveListen, resolveMetrics } from './listen.js';
import { resolveMdmInventory } from './mdm-inventory.js';
import { resolveJamfPush } from './mdm-push.js';
import { resolveScim } from './scim.js';
import { mustParseDuration, type Report, type WarnOfSecretFile } from './option-checks.js';
import type { PortalConfig } from './portal-config.js';
import { resolveProfileList } from './profile-list.js';
import { resolveRadiusAccounting } from './radius-accounting.js';
import { portalConfigSchema, type ParsedPortalConfig } from './schema.js';
import { secretFileWarning } from './secret-files.js';
import { resolveConnectScript, resolveRevocationDeadline } from './timeouts.js';
import { resolveSyslog } from './syslog.js';
import { resolveWebhooks } from './webhooks.js';
import { resolveWireGuard } from './wireguard-options.js';

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

/** Composes the sections, in the order their problems are reported. */
function resolve(raw: ParsedPortalConfig, source: string, baseDir: string, report: Report): PortalConfig {
  const baseUrl = resolveBaseUrl(raw);
  const startWarnings: string[] = [];
  const warnOfSecretFile: WarnOfSecretFile = (option, file) => {
    const warning = secretFileWarning(option, file);
    if (warning !== null) startWarnings.push(warning);
  };
  const dataDir = path.resolve(baseDir, raw.dataDir);
  const database = resolveDatabase(raw.database, dataDir, baseDir, report);
  checkAllowLists(raw, report);
  const { profiles, nodes } = resolveProfileList(raw.ProfileList, report);
  const profileIds = profiles.map((profile) => profile.profileId);

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
    databasePreparedStatements: raw.databasePreparedStatements,
    metrics: resolveMetrics(raw.metrics, report),
    adminApi: raw.adminApi,
    adminConsole: resolveAdminConsole(raw.adminConsole, baseUrl, baseDir, profileIds, report),
    nodeApi: raw.nodeApi,
    webhooks: resolveWebhooks(raw.webhooks, report),
    scim: resolveScim(raw.scim, profileIds, report),
    accounting: {
      radius: resolveRadiusAccounting(raw.accounting.radius, baseDir, report),
      syslog: resolveSyslog(raw.accounting.syslog, raw.Log.originatingIp, baseDir, report),
    },
    enrollment: resolveEnrollment(raw.enrollment, baseDir, profileIds, report, warnOfSecretFile),
    reconcileIntervalMs: Math.max(1000, durationMilliseconds(mustParseDuration(raw.reconcileInterval))),
    mdmInventory: resolveMdmInventory(raw, baseDir, report, warnOfSecretFile),
    mdmPush: { jamf: resolveJamfPush(raw.mdmPush.jamf, baseDir, report, (warning) => startWarnings.push(warning)) },
    connectionLogRetention: mustParseDuration(raw.connectionLogRetention),
    originatingIpRetention: mustParseDuration(raw.originatingIpRetention),
    connectScript: resolveConnectScript(raw, baseDir, report),
    lookups: raw.lookups,
    connectionLogLines: { enabled: raw.Log.syslogConnectionEvents, originatingIp: raw.Log.originatingIp },
    logLevel: raw.logLevel,
    auditLogRetention: mustParseDuration(raw.auditLogRetention),
    revocationDeadlineMs: resolveRevocationDeadline(raw.revocationDeadline, report),
    sessionExpiry: mustParseDuration(raw.sessionExpiry),
    expiryWarning: mustParseDuration(raw.expiryWarning),
    caExpiry: mustParseDuration(raw.caExpiry),
    supportedSessionExpiry: [...new Set([raw.sessionExpiry, ...raw.supportedSessionExpiry])],
    wireGuard: resolveWireGuard(raw.WireGuard, report),
    appleSigning: loadAppleSigning(raw.apple, baseDir, new Date(), report, warnOfSecretFile),
    startWarnings,
    profiles,
    nodes,
  };
}

function describeIssues(source: string, error: z.ZodError): string {
  return error.issues
    .flatMap((issue) =>
      describeIssue(issue).map((message) => `${source}: ${formatPath(issue.path) || '(top level)'}: ${message}`),
    )
    .join('\n');
}

/** An eduVPN option is named with where it went, one a line; other unknown keys keep zod's message. */
function describeIssue(issue: z.core.$ZodIssue): string[] {
  const section = issue.code === 'unrecognized_keys' ? eduVpnSectionAt(issue.path) : null;
  if (issue.code !== 'unrecognized_keys' || section === null) return [issue.message];
  const messages: string[] = [];
  const others: string[] = [];
  for (const key of issue.keys) {
    const fate = eduVpnOptionFate(section, key);
    if (fate === null) others.push(key);
    else messages.push(describeEduVpnOption(key, fate));
  }
  if (others.length > 0)
    messages.unshift(`Unrecognized key${others.length > 1 ? 's' : ''}: ${others.map((key) => `"${key}"`).join(', ')}`);
  return messages;
}

/** The config.php section a path of portal.json corresponds to, if eduVPN has one there. */
function eduVpnSectionAt(path: readonly PropertyKey[]): EduVpnSection | null {
  if (path.length === 0) return 'top';
  if (path.length === 2 && path[0] === 'ProfileList' && typeof path[1] === 'number') return 'ProfileList';
  if (path.length === 1 && (path[0] === 'WireGuard' || path[0] === 'Log')) return path[0];
  return null;
}

function formatPath(segments: readonly PropertyKey[]): string {
  return segments
    .map((segment, index) =>
      typeof segment === 'number' ? `[${segment}]` : `${index === 0 ? '' : '.'}${String(segment)}`,
    )
    .join('');
}
