// The platforms a configuration (and, later, a device) is made for: one list, so the Admin API's
// `platform` parameter, the CLI and the devices all accept and name the same values.

export const PLATFORMS = ['ios', 'macos', 'windows', 'android', 'linux', 'other'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** The platforms whose WireGuard app installs an Apple configuration profile. */
export const APPLE_PLATFORMS = ['ios', 'macos'] as const satisfies readonly Platform[];
export type ApplePlatform = (typeof APPLE_PLATFORMS)[number];

export function isPlatform(text: string): text is Platform {
  return (PLATFORMS as readonly string[]).includes(text);
}

export function isApplePlatform(platform: Platform): platform is ApplePlatform {
  return (APPLE_PLATFORMS as readonly string[]).includes(platform);
}

/** "ios, macos, windows, android, linux or other": for error messages and usage texts. */
export function describePlatforms(): string {
  return `${PLATFORMS.slice(0, -1).join(', ')} or ${PLATFORMS.at(-1)}`;
}
