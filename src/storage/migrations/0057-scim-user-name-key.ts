// A SCIM user's userName is case-insensitive (RFC 7643: "caseExact": false): a directory asking
// for `userName eq "alice@example.org"` must find the User it made as `Alice@Example.org`, and a
// POST of that name in another case is the same User (409), not a second portal user. The key
// the portal compares userNames by (src/storage/scim-name-key.ts) is kept beside each SCIM
// user, unique: the look-up reads an index, and of two POSTs at once of one name in two cases
// only one can commit. Users made before whose names differ only in case (a directory's second
// POST made a second one) are kept as they are: the oldest of each name takes the key, the others
// none, and are reached by their SCIM id alone.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { sizeLimitedGroups } from '../../shared/size-limited-groups.js';
import { scimNameKey } from '../scim-name-key.js';

/** Rows per UPDATE: two values each, far below both dialects' parameter limits. */
const UPDATE_ROWS = 500;

export const scimUserNameKeys: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the user ids it is made from. Text, not varchar(255):
    // lower-casing may lengthen a name (`İ` is two characters lower-cased).
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema.alterTable('scim_users').addColumn('user_name_key', text).execute();

    const users = await sql<{ scim_id: string; user_id: string }>`
      SELECT scim_id, user_id FROM scim_users ORDER BY created_at, scim_id
    `.execute(db);
    const keyed = new Map<string, string>();
    for (const user of users.rows) {
      const key = scimNameKey(user.user_id);
      if (!keyed.has(key)) keyed.set(key, user.scim_id);
    }
    for (const group of sizeLimitedGroups([...keyed], () => 1, UPDATE_ROWS)) {
      const cases = group.map(([key, scimId]) => sql`WHEN ${scimId} THEN ${key}`);
      const ids = group.map(([, scimId]) => scimId);
      await sql`UPDATE scim_users SET user_name_key = CASE scim_id ${sql.join(cases, sql` `)} END
        WHERE scim_id IN (${sql.join(ids)})`.execute(db);
    }
    await db.schema.createIndex('scim_users_user_name_key').on('scim_users').column('user_name_key').unique().execute();
  },
};
