// How long the portal waits for what runs outside it: the OpenVPN connect script
// (`connectScriptPath`, `connectScriptTimeout`) and the nodes' confirmation of a revocation
// (`revocationDeadline`), each bounded so a typo neither hangs a connect nor silences the alarm.
import path from 'node:path';
import { boundedMilliseconds, type Report } from './option-checks.js';
import type { PortalConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

/** A hook that takes longer than a minute holds up an OpenVPN client's connect for too long. */
const SCRIPT_TIMEOUT_BOUNDS = { minMs: 1_000, maxMs: 60_000, text: 'between PT1S and PT1M' } as const;

/** Less than a second is shorter than one node's answer; more than an hour is no alarm. */
const REVOCATION_DEADLINE_BOUNDS = { minMs: 1_000, maxMs: 3_600_000, text: 'between PT1S and PT1H' } as const;

export function resolveConnectScript(
  raw: ParsedPortalConfig,
  baseDir: string,
  report: Report,
): PortalConfig['connectScript'] {
  if (raw.connectScriptPath === undefined) return null;
  return {
    path: path.resolve(baseDir, raw.connectScriptPath),
    timeoutMs: boundedMilliseconds(raw.connectScriptTimeout, 'connectScriptTimeout', SCRIPT_TIMEOUT_BOUNDS, report),
  };
}

export function resolveRevocationDeadline(text: string, report: Report): number {
  return boundedMilliseconds(text, 'revocationDeadline', REVOCATION_DEADLINE_BOUNDS, report);
}
