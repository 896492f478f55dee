// The key SCIM names are compared by, on its own so that migrations 0057 and 0062 fill their
// columns with the very function the queries use (src/storage/scim-users.ts, scim-groups.ts)
// without an import cycle through the database module.

/**
 * RFC 7643 makes a User's userName and a Group's displayName not case-exact ("caseExact":
 * false): `Alice@Example.org` and `alice@example.org` are one User, and a directory asking for
 * `displayName eq "staff"` finds the group it made as `Staff`. Lower-cased by Unicode's default
 * mapping (not the database's, which folds only A to Z on both SQLite and a "C" collation), so
 * `Émile` is `émile` and `Équipe` is `équipe`. Only these look-ups read it: the portal's own
 * user ids, a group's own name and `scim.groupProfiles` stay exact everywhere else.
 */
export function scimNameKey(name: string): string {
  return name.toLowerCase();
}
