// The platforms a device (or a configuration made for one) can be, defined once for every
// place a platform is taken: devices (issue 23), Apple profiles. Wire values, lower case.
import { z } from 'zod';

export const PLATFORMS = ['ios', 'macos', 'windows', 'android', 'linux', 'other'] as const;
export type Platform = (typeof PLATFORMS)[number];

export const platformSchema = z.enum(PLATFORMS);

export function isPlatform(value: string): value is Platform {
  return (PLATFORMS as readonly string[]).includes(value);
}
