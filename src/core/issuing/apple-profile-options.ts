// What a `create` asks of an Apple profile beyond the configuration: which WireGuard app (the
// platform) and whether it connects on demand (the call's `on_demand` over the profile's
// `appleOnDemand`).
import type { AppleOnDemand } from '../../apple/mobileconfig.js';
import type { Profile } from '../../config/portal-config.js';
import { isApplePlatform, type ApplePlatform, type Platform } from '../../shared/platforms.js';

/** The WireGuard app the Apple profile is for: iOS unless the call says macOS. */
export function applePlatformOf(platform: Platform | undefined): ApplePlatform {
  return platform !== undefined && isApplePlatform(platform) ? platform : 'ios';
}

/**
 * The on-demand rules of an Apple profile: the profile's `appleOnDemand` unless the call says
 * otherwise; `on_demand=yes` on a profile without the option gives the bare "connect" rule.
 */
export function appleOnDemandOf(profile: Profile, onDemand: boolean | undefined): AppleOnDemand | null {
  if (onDemand === false) return null;
  if (onDemand === true) return profile.appleOnDemand ?? { trustedSsids: [], probeUrl: null };
  return profile.appleOnDemand;
}
