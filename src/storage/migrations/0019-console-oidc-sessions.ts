// Console sessions signed in through OpenID Connect single sign-on: such a session has no
// key row to read its rights from on each request, so the scope and profile limit its claims
// granted at sign-in are kept on the session's own row (null for the other methods, which read
// them from their key). The audit log names such a session `oidc:<subject>`, and a provider's
// subject may be up to 255 characters (OpenID Connect Core §2; pairwise ids are often 64 hex
// digits), so `audit_log.key_name` grows from 64 to 260 characters (PostgreSQL only: SQLite does
// not enforce a length; widening a varchar rewrites nothing). Numbered 0019: the number this
// work was given.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const consoleOidcSessionsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const collated = (type: string) => sql.raw(postgres ? `${type} collate "C"` : type);
    // `read`, `write` or `admin`.
    await db.schema.alterTable('console_sessions').addColumn('scope', collated('varchar(8)')).execute();
    // A JSON array of profile ids, as admin_keys.profiles; null: every profile.
    await db.schema.alterTable('console_sessions').addColumn('profiles', collated('text')).execute();
    if (postgres) {
      await db.schema
        .alterTable('audit_log')
        .alterColumn('key_name', (column) => column.setDataType(collated('varchar(260)')))
        .execute();
    }
  },
};
