// `mdmPush`: the MDMs that tell the portal of a change as it happens (Jamf Pro's webhooks), read
// while the configuration loads: the webhook's secret files must be readable by the portal's
// user alone and not empty, and at least one way of authenticating must be configured, since an
// unauthenticated receiver would let anyone suspend devices.
import path from 'node:path';
import type { Report } from './option-checks.js';
import type { JamfGroups, JamfPushConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';
import { readSecretFile } from './secret-files.js';

const OPTION = 'mdmPush.jamf';

export function resolveJamfPush(
  raw: ParsedPortalConfig['mdmPush']['jamf'],
  baseDir: string,
  report: Report,
  warn: (warning: string) => void,
): JamfPushConfig | null {
  if (raw === null) return null;
  const withoutKind = raw.allowedGroups.filter((group) => typeof group !== 'object');
  if (withoutKind.length > 0)
    warn(
      `${OPTION}.allowedGroups: ${withoutKind.map((group) => JSON.stringify(group)).join(', ')} names no kind of device, so it stands for a computer group and a mobile device group of that ${withoutKind.length === 1 ? 'id or name' : 'id or name each'} (Jamf Pro numbers the two kinds apart): joining either resumes a device; write {"kind": "computer" | "mobileDevice", "id": N} or "name"`,
    );
  if (raw.basicAuth === undefined && raw.headerAuth === undefined)
    report(OPTION, 'needs basicAuth or headerAuth: an unauthenticated receiver would let anyone suspend devices');
  return {
    allowedGroups: {
      computer: groupsOf(raw.allowedGroups, 'computer'),
      mobile: groupsOf(raw.allowedGroups, 'mobileDevice'),
    },
    basicAuth:
      raw.basicAuth === undefined
        ? null
        : {
            username: raw.basicAuth.username,
            password: readSecretFile(
              path.resolve(baseDir, raw.basicAuth.passwordFile),
              raw.basicAuth.passwordFile,
              `${OPTION}.basicAuth.passwordFile`,
              report,
            ),
          },
    headerAuth:
      raw.headerAuth === undefined
        ? null
        : {
            name: raw.headerAuth.name.toLowerCase(),
            value: readSecretFile(
              path.resolve(baseDir, raw.headerAuth.valueFile),
              raw.headerAuth.valueFile,
              `${OPTION}.headerAuth.valueFile`,
              report,
            ),
          },
    allowList: raw.allowList,
  };
}

type AllowedGroup = NonNullable<ParsedPortalConfig['mdmPush']['jamf']>['allowedGroups'][number];

/** The groups of one kind of device: those named with that kind, and those named with none. */
function groupsOf(allowed: readonly AllowedGroup[], kind: 'computer' | 'mobileDevice'): JamfGroups {
  const ids = new Set<number>();
  const names = new Set<string>();
  for (const group of allowed) {
    if (typeof group === 'number') ids.add(group);
    else if (typeof group === 'string') names.add(group);
    else if (group.kind === kind) {
      if (group.id !== undefined) ids.add(group.id);
      if (group.name !== undefined) names.add(group.name);
    }
  }
  return { ids, names };
}
