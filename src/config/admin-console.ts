// `adminConsole`: whether the browser console is on, how long its sessions idle and live, and
// its single sign-on (console-oidc.ts), which may name the profiles a team administers.
import { resolveConsoleOidc } from './console-oidc.js';
import { boundedMilliseconds, type Report } from './option-checks.js';
import type { PortalConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

/** A console session idles out after a minute to a day, and lives a minute to a week. */
const CONSOLE_IDLE_BOUNDS = { minMs: 60_000, maxMs: 86_400_000, text: 'between PT1M and P1D' } as const;
const CONSOLE_LIFETIME_BOUNDS = { minMs: 60_000, maxMs: 7 * 86_400_000, text: 'between PT1M and P7D' } as const;

export function resolveAdminConsole(
  raw: ParsedPortalConfig['adminConsole'],
  baseUrl: URL,
  baseDir: string,
  profileIds: readonly string[],
  report: Report,
): PortalConfig['adminConsole'] {
  return {
    enabled: raw.enabled,
    idleTimeoutMs: boundedMilliseconds(raw.idleTimeout, 'adminConsole.idleTimeout', CONSOLE_IDLE_BOUNDS, report),
    sessionLifetimeMs: boundedMilliseconds(
      raw.sessionLifetime,
      'adminConsole.sessionLifetime',
      CONSOLE_LIFETIME_BOUNDS,
      report,
    ),
    oidc: resolveConsoleOidc(raw.oidc, baseUrl, baseDir, profileIds, report),
  };
}
