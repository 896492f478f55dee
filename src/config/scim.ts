// `scim`: who may call the SCIM service provider at {baseUrl}scim/v2/, and which of the
// directory's groups grant which profiles; a group that names a profile the portal does not
// have is a mistake reported at start, not a mapping that silently takes nothing.
import { asProfileId } from '../shared/ids.js';
import type { Report } from './option-checks.js';
import type { PortalConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

export function resolveScim(
  raw: ParsedPortalConfig['scim'],
  profileIds: readonly string[],
  report: Report,
): PortalConfig['scim'] {
  for (const [group, profiles] of Object.entries(raw.groupProfiles)) {
    for (const profileId of profiles) {
      if (!profileIds.includes(profileId))
        report(
          `scim.groupProfiles["${group}"]`,
          `there is no profile "${profileId}" (profiles: ${profileIds.join(', ')})`,
        );
    }
  }
  return {
    allowList: raw.allowList,
    linkExistingUsers: raw.linkExistingUsers,
    groupProfiles: new Map(
      Object.entries(raw.groupProfiles).map(([group, profiles]) => [group, profiles.map(asProfileId)]),
    ),
  };
}
