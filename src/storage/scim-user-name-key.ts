// The key a SCIM user's userName is compared by, on its own so that migration 0057 fills the
// column with the very function the queries use (src/storage/scim-users.ts) without an import
// cycle through the database module.

/**
 * RFC 7643 makes a User's userName case-insensitive ("caseExact": false): `Alice@Example.org` and
 * `alice@example.org` are one User. Lower-cased by Unicode's default mapping (not the database's,
 * which folds only A to Z on both SQLite and a "C" collation), so `Émile` is `émile` too. The
 * portal's own user ids are not compared by it: they stay exact everywhere else.
 */
export function scimUserNameKey(userName: string): string {
  return userName.toLowerCase();
}
