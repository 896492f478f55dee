// Console sessions signed in through OpenID Connect (issue 25 item 1): such a session has no
// key row to read its rights from on each request, so the scope and profile limit its claims
// granted at sign-in are kept on the session's own row (null for the other methods, which read
// them from their key). Numbered 0019: the number this work was given.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const consoleOidcSessionsSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const collated = (type: string) => sql.raw(postgres ? `${type} collate "C"` : type);
    // `read`, `write` or `admin`.
    await db.schema.alterTable('console_sessions').addColumn('scope', collated('varchar(8)')).execute();
    // A JSON array of profile ids, as admin_keys.profiles; null: every profile.
    await db.schema.alterTable('console_sessions').addColumn('profiles', collated('text')).execute();
  },
};
