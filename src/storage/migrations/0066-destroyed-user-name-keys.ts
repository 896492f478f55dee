// Beside each destroyed user's digest, the digest of its id letter case aside
// (src/storage/destroyed-user-digest.ts): a device that registers itself with its MDM certificate
// must not make again a user destroyed here when the certificate writes the address in other
// letters (`alice@example.org` for the `Alice@Example.org` the directory deleted). Nullable: of
// the users destroyed before, only those a destroy receipt still names can be keyed so.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { sizeLimitedGroups } from '../../shared/size-limited-groups.js';
import { destroyedUserDigest, destroyedUserNameKeyDigest } from '../destroyed-user-digest.js';

/** Rows per UPDATE: two values each, far below both dialects' parameter limits. */
const UPDATE_ROWS = 500;

export const destroyedUserNameKeys: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the table's other digest.
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema.alterTable('destroyed_users').addColumn('name_key_digest', text).execute();

    const receipts = await sql<{ user_id: string }>`
      SELECT DISTINCT user_id FROM revocations WHERE reason = 'destroy'
    `.execute(db);
    const keys = receipts.rows.map((row) => [
      destroyedUserDigest(row.user_id),
      destroyedUserNameKeyDigest(row.user_id),
    ]);
    for (const group of sizeLimitedGroups(keys, () => 1, UPDATE_ROWS)) {
      const cases = group.map(([digest, key]) => sql`WHEN ${digest} THEN ${key}`);
      const digests = group.map(([digest]) => digest);
      await sql`UPDATE destroyed_users SET name_key_digest = CASE user_digest ${sql.join(cases, sql` `)} END
        WHERE user_digest IN (${sql.join(digests)})`.execute(db);
    }
    await db.schema
      .createIndex('destroyed_users_name_key_digest')
      .on('destroyed_users')
      .column('name_key_digest')
      .execute();
  },
};
