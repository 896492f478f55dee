// `mdmPush`: the MDMs that tell the portal of a change as it happens (Jamf Pro's webhooks), read
// while the configuration loads: the webhook's secret files must be readable by the portal's
// user alone and not empty, and at least one way of authenticating must be configured, since an
// unauthenticated receiver would let anyone suspend devices.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Secret } from '../shared/secret.js';
import type { Report } from './option-checks.js';
import type { JamfPushConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';
import { looseSecretFile } from './secret-files.js';

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
            password: readSecretFile(baseDir, raw.basicAuth.passwordFile, `${OPTION}.basicAuth.passwordFile`, report),
          },
    headerAuth:
      raw.headerAuth === undefined
        ? null
        : {
            name: raw.headerAuth.name.toLowerCase(),
            value: readSecretFile(baseDir, raw.headerAuth.valueFile, `${OPTION}.headerAuth.valueFile`, report),
          },
    allowList: raw.allowList,
  };
}

/** The secret, never quoted; only the portal's user may read its file (secret-files.ts). A final newline is not part of it. */
function readSecretFile(baseDir: string, given: string, option: string, report: Report): Secret {
  const file = path.resolve(baseDir, given);
  try {
    const loose = looseSecretFile(file);
    if (loose !== null) {
      report(option, `${given} ${loose}`);
      return new Secret('');
    }
    const secret = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    if (secret === '') report(option, `${given} is empty`);
    return new Secret(secret);
  } catch (error) {
    report(option, `cannot read ${given} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return new Secret('');
  }
}
