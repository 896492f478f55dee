// When a new configuration expires (reference §10): `now + expires_in`, where expires_in
// defaults to `sessionExpiry` and must be one of the configured values, byte for byte; the
// OpenVPN CA's end caps it. /extend moves an expiry by the same rules.
import type { PortalConfig } from '../../config/portal-config.js';
import { PortalError } from '../errors.js';
import { addDuration, parseIsoDuration } from '../../shared/iso-duration.js';

export function configurationExpiry(config: PortalConfig, now: Date, expiresIn: string | undefined): Date {
  if (expiresIn === undefined) return addDuration(now, config.sessionExpiry);
  const duration = parseIsoDuration(expiresIn);
  if (duration === null || !config.supportedSessionExpiry.includes(expiresIn)) {
    throw new PortalError(
      'unsupported-expiry',
      `provided "expires_in" is not supported by the server, add it to "supportedSessionExpiry" configuration option (supported: ${config.supportedSessionExpiry.join(', ')})`,
    );
  }
  return addDuration(now, duration);
}

/** The CA's end caps every configuration's expiry (reference §10), WireGuard ones too. */
export function cappedExpiry(expiresAt: Date, caNotAfter: Date | null): Date {
  return caNotAfter !== null && caNotAfter.getTime() < expiresAt.getTime() ? caNotAfter : expiresAt;
}
