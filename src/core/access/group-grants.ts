// `scim.groupProfiles` read for one user: which profiles the directory's groups decide, and which
// of those the user's groups grant now. The directory's profile checks take what no group grants,
// and a device registering itself may not enter such a profile; one rule for both, here because
// the directory feature already uses enrollment (it revokes enrollment tokens).
import type { ProfileId, UserId } from '../../shared/ids.js';
import type { Db } from '../../storage/database.js';
import { groupNamesOfScimUser } from '../../storage/scim-groups.js';
import { findScimUserOfUser } from '../../storage/scim-users.js';

/** What groups grant one user the directory provisioned. */
export interface GroupGrants {
  /** A profile some group names, and none of the user's groups grants now. */
  readonly withholds: (profileId: ProfileId) => boolean;
}

/**
 * The user's grants as their groups are now; undefined when groups decide nothing for them: no
 * group names a profile, or the directory did not provision the user (no SCIM user).
 */
export function groupGrantsOfUser(
  db: Db,
  mapping: ReadonlyMap<string, readonly ProfileId[]>,
  userId: UserId,
): Promise<GroupGrants | undefined> {
  return groupGrantsUnderAll(db, [mapping], userId);
}

/**
 * The user's grants by several mappings at once, from one read of their groups: a profile is
 * withheld only when every mapping withholds it (maps it, and grants it by none of the user's
 * groups). Undefined when one of them decides nothing for the user, or the user is no SCIM user.
 */
export async function groupGrantsUnderAll(
  db: Db,
  mappings: readonly ReadonlyMap<string, readonly ProfileId[]>[],
  userId: UserId,
): Promise<GroupGrants | undefined> {
  if (mappings.length === 0 || mappings.some((mapping) => mapping.size === 0)) return undefined;
  const scimUser = await findScimUserOfUser(db, userId);
  if (scimUser === undefined) return undefined;
  const groups = await groupNamesOfScimUser(db, scimUser.scimId);
  const each = mappings.map((mapping) => {
    const mapped = new Set([...mapping.values()].flat());
    const granted = new Set(groups.flatMap((name) => mapping.get(name) ?? []));
    return (profileId: ProfileId) => mapped.has(profileId) && !granted.has(profileId);
  });
  return { withholds: (profileId) => each.every((withholds) => withholds(profileId)) };
}
