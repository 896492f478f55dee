// The mapping of `scim.groupProfiles` last applied, as the portal remembers it (`portal_state`,
// written by src/core/directory/mapping-change.ts): here, below the directory, because a device
// registering itself reads it too, to take no more than the directory's checks would.
import type { PortalConfig } from '../../config/portal-config.js';
import type { ProfileId } from '../../shared/ids.js';
import type { Db } from '../../storage/database.js';
import { readState } from '../../storage/portal-state.js';

type GroupProfiles = PortalConfig['scim']['groupProfiles'];

/** The `portal_state` key of the mapping last applied, as canonicalMapping writes it. */
export const APPLIED_MAPPING_KEY = 'scim_group_profiles_applied';

/** One form per mapping, whatever the order of its groups and profiles: what is compared and remembered. */
export function canonicalMapping(mapping: GroupProfiles): string {
  return JSON.stringify(
    [...mapping.entries()]
      .map(([group, profiles]) => [group, [...new Set(profiles)].sort()] as const)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
}

/**
 * The remembered mapping; `{}` when none was remembered, or when it cannot be read (the
 * configured one is then remembered as a first mapping is: a text nobody can read is no reason
 * to revoke everyone's configurations).
 */
export function parseMapping(text: string | null): GroupProfiles {
  if (text === null) return new Map();
  try {
    const entries: unknown = JSON.parse(text);
    if (!Array.isArray(entries)) return new Map();
    const mapping = new Map<string, ProfileId[]>();
    for (const entry of entries) {
      if (!Array.isArray(entry) || typeof entry[0] !== 'string' || !Array.isArray(entry[1])) return new Map();
      mapping.set(
        entry[0],
        entry[1].filter((profile): profile is ProfileId => typeof profile === 'string'),
      );
    }
    return mapping;
  } catch {
    return new Map();
  }
}

/**
 * The mapping applied last when it is not `own`: another instance started since with a different
 * one (a rolling restart under way). Null when it is `own`, or none is remembered.
 */
export async function appliedMappingIfOther(db: Db, own: GroupProfiles): Promise<GroupProfiles | null> {
  const applied = await readState(db, APPLIED_MAPPING_KEY);
  return applied === null || applied === canonicalMapping(own) ? null : parseMapping(applied);
}
