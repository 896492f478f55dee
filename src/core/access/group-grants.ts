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
export async function groupGrantsOfUser(
  db: Db,
  mapping: ReadonlyMap<string, readonly ProfileId[]>,
  userId: UserId,
): Promise<GroupGrants | undefined> {
  if (mapping.size === 0) return undefined;
  const scimUser = await findScimUserOfUser(db, userId);
  if (scimUser === undefined) return undefined;
  const mapped = new Set([...mapping.values()].flat());
  const granted = new Set((await groupNamesOfScimUser(db, scimUser.scimId)).flatMap((name) => mapping.get(name) ?? []));
  return { withholds: (profileId) => mapped.has(profileId) && !granted.has(profileId) };
}
