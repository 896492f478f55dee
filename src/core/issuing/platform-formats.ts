// Which files a platform's apps can use: the Apple profile only on iOS/iPadOS and macOS, where
// the WireGuard app installs it; every other format anywhere. A `create` naming another
// platform never gets the Apple profile, and its 406 says what that platform can take.
import { isApplePlatform, type Platform } from '../../shared/platforms.js';
import { CONFIGURATION_MEDIA_TYPES, type ConfigFormat } from '../../protocol/admin-api.js';
import type { OfferedFormat } from './protocol-selection.js';

export function platformTakes(platform: Platform, format: ConfigFormat): boolean {
  return format !== 'apple' || isApplePlatform(platform);
}

/** The offered formats the platform can use (all of them when the call names no platform). */
export function formatsForPlatform(offered: readonly OfferedFormat[], platform: Platform | undefined): OfferedFormat[] {
  return platform === undefined ? [...offered] : offered.filter((entry) => platformTakes(platform, entry.format));
}

/** Said after "no common VPN protocol" when the platform took formats out of the offer. */
export function platformHint(offered: readonly OfferedFormat[], platform: Platform | undefined): string {
  if (platform === undefined || offered.every((entry) => platformTakes(platform, entry.format))) return '';
  const takes = (Object.keys(CONFIGURATION_MEDIA_TYPES) as ConfigFormat[]).filter((format) =>
    platformTakes(platform, format),
  );
  return `; platform "${platform}" takes ${takes.map((format) => CONFIGURATION_MEDIA_TYPES[format]).join(', ')}`;
}
