// `destroyed_users`: each user id destroyed here, by a digest (src/storage/destroyed-users.ts),
// kept for good so that the eduVPN import never brings a destroyed user back, also once the
// receipt of its destroy and the import's note of it were pruned, and also a user made here and
// never brought by an import. The users destroyed before: those a destroy receipt here names
// (destroyed at its latest), and those an import brought that are not here any more, whose
// receipt went already (destroyed by the migration's time at the latest).
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';
import { sizeLimitedGroups } from '../../shared/size-limited-groups.js';
import { formatAtom } from '../../shared/time.js';
import { destroyedUserDigest } from '../destroyed-user-digest.js';

/** Rows per statement: two columns, far below both dialects' parameter limits. */
const INSERT_ROWS = 500;

export const destroyedUsersSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as the other tables' ids.
    const text = postgres ? sql.raw('text collate "C"') : sql.raw('text');
    await db.schema
      .createTable('destroyed_users')
      .addColumn('user_digest', text, (column) => column.primaryKey())
      .addColumn('destroyed_at', text, (column) => column.notNull())
      .execute();

    const destroyed = new Map<string, string>();
    const receipts = await sql<{ user_id: string; destroyed_at: string }>`
      SELECT user_id, MAX(requested_at) AS destroyed_at FROM revocations WHERE reason = 'destroy' GROUP BY user_id
    `.execute(db);
    for (const row of receipts.rows) destroyed.set(row.user_id, row.destroyed_at);
    const gone = await sql<{ record_id: string }>`
      SELECT record_id FROM imported_records
      WHERE kind = 'user' AND NOT EXISTS (SELECT 1 FROM users WHERE users.user_id = imported_records.record_id)
    `.execute(db);
    const now = formatAtom(new Date());
    for (const row of gone.rows) if (!destroyed.has(row.record_id)) destroyed.set(row.record_id, now);

    for (const group of sizeLimitedGroups([...destroyed], () => 1, INSERT_ROWS)) {
      const values = group.map(([userId, destroyedAt]) => sql`(${destroyedUserDigest(userId)}, ${destroyedAt})`);
      await sql`INSERT INTO destroyed_users (user_digest, destroyed_at) VALUES ${sql.join(values)}`.execute(db);
    }
  },
};
