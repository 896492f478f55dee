// Kept answers (Idempotency-Key) belong to an admin key's lineage, not to its name, so a
// new key that takes an old key's name cannot replay the old key's answers:
// a key and the keys rotated from it share a lineage (the id of its first key); a new key that
// reuses a revoked key's name starts a new one, and so never gets the old key's answers. The
// secret is the lineage `secret`. Answers kept for admin keys before this are dropped: they were
// sealed for a name, and which lineage made them cannot be told for certain (the secret's stay).
// Numbered 0011: the number this work was given.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

interface KeyRow {
  readonly key_id: string;
  readonly replaced_by: string | null;
}

export const adminKeyLineageSchema: Migration = {
  async up(untyped: Kysely<unknown>): Promise<void> {
    // Table names are known here; the migration is written against the rows as they are.
    const db = untyped as Kysely<Record<string, Record<string, unknown>>>;
    const postgres = untyped.getExecutor().adapter instanceof PostgresAdapter;
    await db.schema
      .alterTable('admin_keys')
      .addColumn('lineage', sql.raw(postgres ? 'varchar(32) collate "C"' : 'varchar(32)'))
      .execute();
    const keys = (await db.selectFrom('admin_keys').select(['key_id', 'replaced_by']).execute()) as unknown as KeyRow[];
    const rotatedFrom = new Map(keys.filter((key) => key.replaced_by !== null).map((key) => [key.replaced_by, key]));
    for (const key of keys) {
      let first = key;
      for (
        let previous = rotatedFrom.get(first.key_id);
        previous !== undefined;
        previous = rotatedFrom.get(first.key_id)
      )
        first = previous;
      await db.updateTable('admin_keys').set({ lineage: first.key_id }).where('key_id', '=', key.key_id).execute();
    }

    await db.deleteFrom('idempotency_records').where('key_name', '<>', 'secret').execute();
    await db.schema.alterTable('idempotency_records').renameColumn('key_name', 'key_lineage').execute();
  },
};
