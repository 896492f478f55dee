// Who disabled a user: the directory (SCIM) may enable again only a user it disabled itself, never
// one an administrator disabled (during an incident, say) while the directory still calls the
// person active. Users disabled before this column are taken as disabled by an administrator.
import type { Kysely, Migration } from 'kysely';

export const userDisabledBy: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('users').addColumn('disabled_by', 'text').execute();
  },
};
