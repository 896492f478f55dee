// An OpenID console session keeps the scope and profiles its claims granted at sign-in; the
// rules that granted them (`adminConsole.oidc`: issuer, client, the scope and profiles claim
// mappings) may change since, say to take back a scope a mapping gave by mistake. Each such
// session now keeps a digest of those rules (SHA-256, hex) and ends when the configuration's
// differ. Sessions from before could not be checked, so they end here: those administrators sign
// in again once.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const consoleOidcSessionRules: Migration = {
  async up(untyped: Kysely<unknown>): Promise<void> {
    const postgres = untyped.getExecutor().adapter instanceof PostgresAdapter;
    await untyped.schema
      .alterTable('console_sessions')
      .addColumn('oidc_rules_digest', sql.raw(postgres ? 'varchar(64) collate "C"' : 'varchar(64)'))
      .execute();
    // The table is known here; the migration is written against the rows as they are.
    const db = untyped as Kysely<{ console_sessions: { method: string } }>;
    await db.deleteFrom('console_sessions').where('method', '=', 'oidc').execute();
  },
};
