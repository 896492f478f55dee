// The key a SCIM group's displayName is compared by in a directory's filter, on its own so that
// migration 0062 fills the column with the very function the queries use (src/storage/scim-groups.ts).

/**
 * RFC 7643 makes a Group's displayName not case-exact: a directory asking for `displayName eq
 * "staff"` finds the group it made as `Staff`. Lower-cased by Unicode's default mapping, as
 * userNames are (`Équipe` is `équipe`). Only the filter reads it: the group's own name, and
 * `scim.groupProfiles`, stay exact.
 */
export function scimGroupNameKey(displayName: string): string {
  return displayName.toLowerCase();
}
