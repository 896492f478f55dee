// What the directory last said of each of its users' `active` (`scim_users.directory_active`):
// an administrator's enable_user must not let back in a person the directory calls inactive,
// also when an administrator's disable came first and the directory's `active: false` changed
// nothing then. Users the directory disabled itself before this migration are known to be
// inactive there; of the others the directory's word is not known until it speaks again.
import { sql, type Kysely, type Migration } from 'kysely';

export const scimDirectoryActive: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('scim_users').addColumn('directory_active', 'integer').execute();
    await sql`UPDATE scim_users SET directory_active = 0
      WHERE user_id IN (SELECT user_id FROM users WHERE is_disabled = 1 AND disabled_by = '(directory)')`.execute(db);
  },
};
