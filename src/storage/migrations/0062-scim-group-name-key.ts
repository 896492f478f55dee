// A directory finds a group by `displayName eq "…"` in any case (RFC 7643: not case-exact). The
// key it is compared by (src/storage/scim-name-key.ts) is kept beside each group, indexed,
// so the look-up a directory makes for each of its groups reads an index, not every group. Not
// unique: groups whose names differ only in case may exist, and a filter answers them all.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { sizeLimitedGroups } from '../../shared/size-limited-groups.js';
import { scimNameKey } from '../scim-name-key.js';

/** Rows per UPDATE: two values each, far below both dialects' parameter limits. */
const UPDATE_ROWS = 500;

export const scimGroupNameKeys: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the names it is made from.
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema.alterTable('scim_groups').addColumn('display_name_key', text).execute();
    const groups = await sql<{ scim_id: string; display_name: string }>`
      SELECT scim_id, display_name FROM scim_groups
    `.execute(db);
    for (const group of sizeLimitedGroups(groups.rows, () => 1, UPDATE_ROWS)) {
      const cases = group.map((row) => sql`WHEN ${row.scim_id} THEN ${scimNameKey(row.display_name)}`);
      const ids = group.map((row) => row.scim_id);
      await sql`UPDATE scim_groups SET display_name_key = CASE scim_id ${sql.join(cases, sql` `)} END
        WHERE scim_id IN (${sql.join(ids)})`.execute(db);
    }
    await db.schema
      .createIndex('scim_groups_by_name_key')
      .on('scim_groups')
      .columns(['display_name_key', 'display_name'])
      .execute();
  },
};
