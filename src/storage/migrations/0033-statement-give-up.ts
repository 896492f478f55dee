// A create on PostgreSQL is one statement, run as its own transaction (src/storage/new-peer.ts):
// built for the common case (a known user or a new one, a free address), it must undo itself
// when the case turns out otherwise, and say which. SQL has no way to raise an error with a
// message of one's own; this function does, with a SQLSTATE of the portal's own (VP001), so the
// portal tells it from every other error. SQLite runs a create step by step and needs nothing.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const statementGiveUpFunction: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
    await sql`CREATE FUNCTION vpn_portal_give_up(reason text) RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        RAISE EXCEPTION USING ERRCODE = 'VP001', MESSAGE = reason;
      END
    $$`.execute(db);
  },
};
