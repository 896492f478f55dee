// `configuration.expiring`: announced once per configuration, `expiryWarning` (default P7D)
// before it expires, so the systems around the VPN can have it renewed (/extend) in time. A
// configuration made or extended for no longer than `expiryWarning` is not announced: whoever
// made it knows when it ends. Whether the warning is still to come is stored with the
// configuration (`expiry_warned`), so it fires once whatever restarts in between.
import type { PortalConfig } from '../config/portal-config.js';
import { subtractDuration } from '../shared/iso-duration.js';

/** Whether a configuration expiring at `expiresAt`, made or extended `now`, is already past its warning (none will come). */
export function warningAlreadyPast(config: PortalConfig, now: Date, expiresAt: Date): boolean {
  return subtractDuration(expiresAt, config.expiryWarning).getTime() <= now.getTime();
}
