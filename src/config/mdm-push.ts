// `mdmPush`: the MDMs that tell the portal of a change as it happens (Jamf Pro's webhooks), read
// while the configuration loads: the webhook's secret files must be readable by the portal's
// user alone and not empty, and at least one way of authenticating must be configured, since an
// unauthenticated receiver would let anyone suspend devices.
import path from 'node:path';
import type { Report } from './option-checks.js';
import type { JamfPushConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';
import { readSecretFile } from './secret-files.js';

const OPTION = 'mdmPush.jamf';

export function resolveJamfPush(
  raw: ParsedPortalConfig['mdmPush']['jamf'],
  baseDir: string,
  report: Report,
): JamfPushConfig | null {
  if (raw === null) return null;
  if (raw.basicAuth === undefined && raw.headerAuth === undefined)
    report(OPTION, 'needs basicAuth or headerAuth: an unauthenticated receiver would let anyone suspend devices');
  const names = raw.allowedGroups.filter((group): group is string => typeof group === 'string');
  const ids = raw.allowedGroups.filter((group): group is number => typeof group === 'number');
  return {
    allowedGroupIds: new Set(ids),
    allowedGroupNames: new Set(names),
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
